// What tests/sdk/anthropic.mjs and tests/sdk/openai.mjs share: the scripted
// model server (build/tests/emulators/model_server, or $MODEL_SERVER) started
// on a scenario, checks that print one line each, and test images.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

const root = fileURLToPath(new URL('../..', import.meta.url));

// Starts the server on tests/fixtures/scenarios/NAME; resolves once it listens.
export async function startEmulator(name) {
	const bin = process.env.MODEL_SERVER || join(root, 'build/tests/emulators/model_server');
	const dir = mkdtempSync(join(tmpdir(), 'rakazo-sdk-model-'));
	const report = join(dir, 'report.json');
	const child = spawn(bin, [join(root, 'tests/fixtures/scenarios', name), '--report', report], {
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	let stderr = '';
	child.stderr.on('data', (d) => (stderr += d));
	const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
	const url = await new Promise((resolve, reject) => {
		let out = '';
		child.stdout.on('data', (d) => {
			out += d;
			const m = out.match(/^listening on (http:\/\/127\.0\.0\.1:\d+)$/m);
			if (m) resolve(m[1]);
		});
		child.on('error', reject);
		exited.then((code) => reject(new Error(`${bin} exited ${code}: ${stderr}`)));
	});
	return {
		url,
		// Waits for the server to end (after its last step; a signal ends it
		// sooner) and returns its exit status and report.
		async finish(waitMs = 5000) {
			const timer = setTimeout(() => child.kill('SIGTERM'), waitMs);
			const code = await exited;
			clearTimeout(timer);
			let doc = null;
			try {
				doc = JSON.parse(readFileSync(report, 'utf8'));
			} catch (e) {
				doc = { error: String(e) };
			}
			rmSync(dir, { recursive: true, force: true });
			return { code, report: doc, stderr };
		},
	};
}

// Checks that print "ok   NAME" or "FAIL NAME: why", then a summary line.
export function checker(suite) {
	let passed = 0;
	let failed = 0;
	return {
		async check(name, fn) {
			try {
				await fn();
				passed++;
				console.log(`ok   ${name}`);
			} catch (e) {
				failed++;
				console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
			}
		},
		done() {
			console.log(`sdk ${suite}: ${passed} passed, ${failed} failed`);
			process.exitCode = failed ? 1 : 0;
		},
	};
}

const crcTable = Array.from({ length: 256 }, (_, n) => {
	let c = n;
	for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
	return c >>> 0;
});
function crc32(buf) {
	let c = 0xffffffff;
	for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
	return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
	const len = Buffer.alloc(4);
	len.writeUInt32BE(data.length);
	const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
	const crc = Buffer.alloc(4);
	crc.writeUInt32BE(crc32(td));
	return Buffer.concat([len, td, crc]);
}

// An RGB PNG of w x h with a gradient (seed changes it), base64.
export function pngBase64(w, h, seed = 0) {
	const raw = Buffer.alloc((w * 3 + 1) * h);
	for (let y = 0; y < h; y++) {
		const row = y * (w * 3 + 1);
		for (let x = 0; x < w; x++) {
			raw[row + 1 + x * 3] = (x + seed) & 0xff;
			raw[row + 2 + x * 3] = y & 0xff;
			raw[row + 3 + x * 3] = (seed * 7) & 0xff;
		}
	}
	const ihdr = Buffer.alloc(13);
	ihdr.writeUInt32BE(w, 0);
	ihdr.writeUInt32BE(h, 4);
	ihdr[8] = 8; // bit depth
	ihdr[9] = 2; // RGB
	const png = Buffer.concat([
		Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
		chunk('IHDR', ihdr),
		chunk('IDAT', zlib.deflateSync(raw)),
		chunk('IEND', Buffer.alloc(0)),
	]);
	return png.toString('base64');
}

// A 48x32 JPEG (libjpeg, quality 75), base64.
export const JPEG_48x32 =
	'/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjL/wAARCAAgADADASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwDyOKx9quRWPtW1FY+1XIrH2r6KeLODC47zMWKx9quRWPtW1FY+1XIrH2rjniz6TC47zMWKx9quRWPtW1FY+1XIrH2rjniz6PC47zMiKx9quRWPtW1FY+1XIrH2rhniz8IwuO8zFisfarkVj7VtRWPtVyKx9q454s+kwuO8zFisfarkVj7VtRWPtVyKx9q454s+kwuO8z//2Q==';

// Every assertion of every request in a report, failed first.
export function failedAssertions(report) {
	const out = [];
	for (const r of report.requests || [])
		for (const a of r.assertions || []) if (!a.ok) out.push(`step ${r.step}: ${a.name}: ${a.detail}`);
	return out;
}
