// Fidelity: the vendor's own SDKs (`e2b`, `@e2b/desktop`) against the E2B
// emulator. If they disagree, the emulator is wrong.
//
//   E2B_API_URL=http://127.0.0.1:PORT E2B_SANDBOX_URL=http://127.0.0.1:PORT \
//   E2B_API_KEY=e2b_test node tests/sdk/e2b.mjs
//
// The packages come from tests/sdk/node_modules (sh tests/sdk/setup.sh).
// Prints "sdk: N passed, N failed".
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { Sandbox: Desktop } = require('@e2b/desktop');
const { Sandbox, CommandExitError } = require('e2b');

let passed = 0, failed = 0;
async function step(name, fn) {
	try {
		await fn();
		passed++;
		console.log(`ok   ${name}`);
	} catch (e) {
		failed++;
		console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
	}
}
function expect(cond, what) {
	if (!cond) throw new Error(`expected ${what}`);
}

let desk, plain;
await step('desktop create (Xvfb and the session, as the desktop SDK starts them)', async () => {
	desk = await Desktop.create({ resolution: [1280, 800], timeoutMs: 300_000, metadata: { suite: 'sdk' } });
	expect(desk.sandboxId, 'a sandbox id');
});
await step('run a command', async () => {
	const r = await desk.commands.run('echo hello from $DISPLAY; echo warn >&2');
	expect(r.exitCode === 0, `exit 0, got ${r.exitCode}`);
	expect(r.stdout === 'hello from :0\n', `stdout "hello from :0", got ${JSON.stringify(r.stdout)}`);
	expect(r.stderr === 'warn\n', `stderr "warn", got ${JSON.stringify(r.stderr)}`);
});
await step('a failing command throws CommandExitError', async () => {
	let caught = null;
	try {
		await desk.commands.run('exit 7');
	} catch (e) {
		caught = e;
	}
	expect(caught instanceof CommandExitError && caught.exitCode === 7, `CommandExitError with 7, got ${caught}`);
});
await step('streamed output and a background command', async () => {
	const seen = [];
	const h = await desk.commands.run('for i in 1 2 3; do echo line$i; sleep 0.1; done', { background: true, onStdout: (d) => seen.push(d) });
	const r = await h.wait();
	expect(r.exitCode === 0 && seen.join('') === 'line1\nline2\nline3\n', `three lines, got ${JSON.stringify(seen)}`);
});
await step('kill a running command', async () => {
	const h = await desk.commands.run('sleep 60', { background: true });
	const list = await desk.commands.list();
	expect(list.some((p) => p.pid === h.pid), `pid ${h.pid} listed`);
	expect(await h.kill(), 'kill to return true');
	let code = null;
	try {
		await h.wait();
	} catch (e) {
		code = e.exitCode;
	}
	expect(code === -1, `exit code -1 after a kill, got ${code}`);
});
await step('write, read, list, stat and remove a file', async () => {
	await desk.files.write('/home/user/notes/hello.txt', 'hi there');
	const text = await desk.files.read('/home/user/notes/hello.txt');
	expect(text === 'hi there', `"hi there", got ${JSON.stringify(text)}`);
	const entries = await desk.files.list('/home/user/notes');
	expect(entries.length === 1 && entries[0].name === 'hello.txt' && entries[0].type === 'file', `one file, got ${JSON.stringify(entries)}`);
	const info = await desk.files.getInfo('/home/user/notes/hello.txt');
	expect(info.size === 8, `size 8, got ${info.size}`);
	expect(await desk.files.exists('/home/user/notes/hello.txt'), 'exists');
	await desk.files.remove('/home/user/notes/hello.txt');
	expect(!(await desk.files.exists('/home/user/notes/hello.txt')), 'gone after remove');
});
await step('binary round trip', async () => {
	const bytes = new Uint8Array(256).map((_, i) => i);
	await desk.files.write('/home/user/bin.dat', bytes.buffer);
	const back = await desk.files.read('/home/user/bin.dat', { format: 'bytes' });
	expect(back.length === 256 && back.every((b, i) => b === i), 'the same 256 bytes');
});
await step('screenshot is a 1280x800 PNG', async () => {
	const png = await desk.screenshot();
	expect(png[0] === 0x89 && png[1] === 0x50 && png[2] === 0x4e && png[3] === 0x47, 'the PNG signature');
	const w = Buffer.from(png.slice(16, 20)).readUInt32BE(0), h = Buffer.from(png.slice(20, 24)).readUInt32BE(0);
	expect(w === 1280 && h === 800, `1280x800, got ${w}x${h}`);
});
await step('mouse and keyboard through xdotool', async () => {
	await desk.moveMouse(100, 200);
	const pos = await desk.getCursorPosition();
	expect(pos.x === 100 && pos.y === 200, `cursor at 100,200, got ${JSON.stringify(pos)}`);
	const size = await desk.getScreenSize();
	expect(size.width === 1280 && size.height === 800, `screen 1280x800, got ${JSON.stringify(size)}`);
});
await step('getInfo, setTimeout and list', async () => {
	const info = await Sandbox.getInfo(desk.sandboxId);
	expect(info.sandboxId === desk.sandboxId && info.templateId === 'desktop' && info.state === 'running', `running desktop, got ${JSON.stringify(info)}`);
	expect(info.metadata.suite === 'sdk', 'the metadata');
	await desk.setTimeout(600_000);
	const page = await Sandbox.list({ query: { metadata: { suite: 'sdk' } } }).nextItems();
	expect(page.some((s) => s.sandboxId === desk.sandboxId), 'the sandbox in the list');
});
await step('pause and connect keep files', async () => {
	plain = await Sandbox.create('base', { timeoutMs: 120_000 });
	await plain.files.write('/home/user/kept.txt', 'kept');
	expect(await plain.pause(), 'pause to return true');
	expect((await Sandbox.getInfo(plain.sandboxId)).state === 'paused', 'state paused');
	const again = await Sandbox.connect(plain.sandboxId);
	expect((await again.files.read('/home/user/kept.txt')) === 'kept', 'the file after connect');
});
await step('kill', async () => {
	expect(await desk.kill() === undefined || true, 'kill');
	expect(await Sandbox.kill(plain.sandboxId), 'kill by id to return true');
	expect(!(await Sandbox.kill(plain.sandboxId)), 'a second kill to return false');
	let notFound = false;
	try {
		await Sandbox.getInfo(desk.sandboxId);
	} catch (e) {
		notFound = e.name === 'SandboxNotFoundError' || /not found/i.test(String(e.message));
	}
	expect(notFound, 'getInfo on a killed sandbox to say not found');
});
console.log(`sdk: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
