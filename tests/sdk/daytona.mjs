// Fidelity: the official @daytonaio/sdk runs a scripted scenario against the
// Daytona emulator. If the SDK and the emulator disagree, the emulator is
// wrong. Run by tests/sdk/run.sh with DAYTONA_API_URL pointing at it; the
// SDK comes from tests/sdk/.deps (npm install there, git-ignored).
//
// Prints "sdk daytona: N passed, N failed"; exits non-zero on a failure.
import { createRequire } from 'module';

const require = createRequire(import.meta.url);
const { Daytona } = require(process.env.RAKAZO_SDK_DEPS + '/node_modules/@daytonaio/sdk');

let passed = 0;
let failed = 0;
function check(what, ok, detail) {
	if (ok) passed++;
	else {
		failed++;
		console.log(`not ok: ${what}${detail !== undefined ? `: ${detail}` : ''}`);
	}
}

const daytona = new Daytona({
	apiKey: process.env.DAYTONA_API_KEY,
	apiUrl: process.env.DAYTONA_API_URL,
	target: 'local',
	useDeprecatedPolling: true,
});

let sandbox;
try {
	sandbox = await daytona.create({ labels: { rakazo: 'sdk-fidelity' } }, { timeout: 120 });
	check('create returns a started sandbox', sandbox.state === 'started', sandbox.state);

	const got = await daytona.get(sandbox.id);
	check('get finds it by id', got.id === sandbox.id);
	check('labels round-trip', got.labels && got.labels.rakazo === 'sdk-fidelity');

	const r = await sandbox.process.executeCommand('echo sdk-ok');
	check('executeCommand exit code', r.exitCode === 0, r.exitCode);
	check('executeCommand output', r.result === 'sdk-ok\n', JSON.stringify(r.result));

	const r2 = await sandbox.process.executeCommand('bash -c "exit 3"');
	check('executeCommand non-zero exit', r2.exitCode === 3, r2.exitCode);

	const home = await sandbox.getUserHomeDir();
	check('user home dir', home === '/home/user', home);

	const bytes = Buffer.from([0, 1, 2, 250, 255, 10, 13]);
	await sandbox.fs.uploadFile(bytes, `${home}/sdk/bin.dat`);
	const back = await sandbox.fs.downloadFile(`${home}/sdk/bin.dat`);
	check('binary file round-trips', Buffer.compare(Buffer.from(back), bytes) === 0, back && back.length);

	const list = await sandbox.fs.listFiles(`${home}/sdk`);
	check('listFiles sees the file', list.length === 1 && list[0].name === 'bin.dat' && list[0].size === 7);

	await sandbox.process.createSession('s1');
	const cmd = await sandbox.process.executeSessionCommand('s1', { command: 'echo one; echo two >&2', runAsync: false });
	check('session command exit code', cmd.exitCode === 0, cmd.exitCode);
	const logs = await sandbox.process.getSessionCommandLogs('s1', cmd.cmdId);
	check('session logs', logs.stdout === 'one\n' && logs.stderr === 'two\n', JSON.stringify(logs));
	await sandbox.process.deleteSession('s1');

	await sandbox.computerUse.start();
	const shot = await sandbox.computerUse.screenshot.takeFullScreen();
	const png = Buffer.from(shot.screenshot || '', 'base64');
	check('screenshot is a PNG', png.length > 100 && png.slice(1, 4).toString() === 'PNG', png.length);
	await sandbox.computerUse.mouse.click(100, 120);
	const pos = await sandbox.computerUse.mouse.getPosition();
	check('mouse click moves the pointer', pos.x === 100 && pos.y === 120, JSON.stringify(pos));
	await sandbox.computerUse.keyboard.type('hi');

	await sandbox.stop();
	await sandbox.refreshData();
	check('stop', sandbox.state === 'stopped', sandbox.state);
	await sandbox.start();
	const again = await sandbox.fs.downloadFile(`${home}/sdk/bin.dat`);
	check('files survive stop/start', Buffer.compare(Buffer.from(again), bytes) === 0);

	await sandbox.delete();
	let gone = false;
	try {
		await daytona.get(sandbox.id);
	} catch (e) {
		gone = /not found/i.test(String(e.message)) || e.statusCode === 404;
	}
	check('delete: get is not found afterwards', gone);
	sandbox = null;
} catch (e) {
	check('scenario ran to its end', false, e && e.stack ? e.stack : e);
} finally {
	if (sandbox) await sandbox.delete().catch(() => {});
}
console.log(`sdk daytona: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
