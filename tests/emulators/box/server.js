#!/usr/bin/env node
'use strict';
// A local Box (ascii.dev sandbox machines): the calls the reference
// implementation makes through @asciidev/box-sdk (BoxApi: create, get,
// update, resume, stop, command, commandStatus, writeFile, artifactRaw,
// desktop, and DELETE with X-Ascii-Confirm-Delete). That SDK is not
// published on npm, so the paths below follow its method names and the
// shapes the reference reads (box.state, command.finished/started, running,
// processId, tailBytes); where the real service differs, this file is the
// one to fix.
//
//   node server.js --image IMAGE [--port N] [--port-file F] [--key KEY]
//
// Base path /api/box/v1. Every call needs "Authorization: Bearer KEY".
// A box is a real local container of the rakazo-computer image:
//   - ttlSeconds (default 7200) runs from the last create/resume/update; at
//     expiry the box is archived (its container stopped, files kept);
//   - noEnv:false hands the account's key into the machine as ASCII_API_KEY,
//     as a box made for its owner gets; noEnv:true keeps the machine clean;
//   - one desktop per machine: POST .../desktop with a display other than 0
//     is refused (409 MULTI_SCREEN_UNAVAILABLE);
//   - the desktop URL carries a secret _token (what our gateway must hide).
// Faults and the request log: see ../daytona/common.js; control routes
// GET /_emulator/boxes, POST /_emulator/boxes/<id>/vanish,
// GET|DELETE /_emulator/requests.

const crypto = require('crypto');
const C = require('../daytona/common.js');

const args = C.parseArgs(process.argv.slice(2));
const IMAGE = args.image || process.env.RAKAZO_IMAGE;
if (!IMAGE) {
	process.stderr.write('box emulator: --image is required\n');
	process.exit(2);
}
const KEY = args.key || process.env.BOX_API_KEY || 'emulator-key';
const HOME = '/home/user';
const BASE = '/api/box/v1';
const containers = new C.Containers('box', IMAGE);
const boxes = new Map();
const requests = [];

const now = () => new Date().toISOString();
const err = (status, message, code) => ({ status, body: { error: { code: code || String(status), message } } });

function view(b) {
	return {
		id: b.id,
		state: b.state,
		ttlSeconds: b.ttlSeconds,
		expiresAt: new Date(b.expiresAtMs).toISOString(),
		noEnv: b.noEnv,
		createdAt: b.createdAt,
		updatedAt: b.updatedAt,
	};
}

function arm(b, ttl) {
	if (ttl !== undefined) b.ttlSeconds = ttl;
	b.expiresAtMs = Date.now() + b.ttlSeconds * 1000;
	b.updatedAt = now();
	if (b.timer) clearTimeout(b.timer);
	b.timer = setTimeout(() => expire(b), Math.min(b.ttlSeconds * 1000, 2 ** 31 - 1));
	b.timer.unref();
}

async function expire(b) {
	if (b.state !== 'ready' || !boxes.has(b.id)) return;
	b.state = 'archiving';
	await containers.stop(b.cid);
	b.state = 'archived';
	b.desktop = null;
}

async function lookup(id) {
	const b = boxes.get(id);
	if (!b) return null;
	if ((await containers.state(b.cid)) === 'gone') {
		boxes.delete(id);
		return null;
	}
	return b;
}

const validTtl = (t) => t === undefined || (Number.isInteger(t) && t >= 60 && t <= 86400);

async function runCommand(b, cmd, cwd) {
	const dir = cwd ? (cwd.startsWith('/') ? cwd : `${HOME}/${cwd}`) : HOME;
	return containers.spawn(b.cid, ['bash', '-c', cmd], { cwd: dir });
}

function finishOf(p) {
	const c = { stdout: [], stderr: [], exitCode: undefined, pid: 0, proc: p };
	p.stdout.on('data', (d) => c.stdout.push(d));
	p.stderr.on('data', (d) => c.stderr.push(d));
	p.stdin.on('error', () => {});
	p.stdin.end();
	c.done = new Promise((resolve) =>
		p.on('close', (code) => {
			c.exitCode = code === null ? 137 : code;
			resolve();
		}),
	);
	return c;
}

const tail = (bufs, n) => {
	const all = Buffer.concat(bufs);
	return (all.length > n ? all.slice(all.length - n) : all).toString('utf8');
};

async function route(ctx) {
	if (ctx.headers.authorization !== `Bearer ${KEY}`)
		return err(401, 'missing or invalid API key', 'unauthorized');
	if (!ctx.path.startsWith(`${BASE}/boxes`)) return err(404, `no route ${ctx.method} ${ctx.path}`, 'not_found');
	const parts = ctx.path.slice(BASE.length).split('/').filter(Boolean).map(decodeURIComponent);
	const m = ctx.method;
	let body = {};
	if (ctx.body.length && (ctx.headers['content-type'] || '').includes('json')) {
		try {
			body = JSON.parse(ctx.body.toString());
		} catch (e) {
			return err(400, 'the body is not JSON', 'invalid_request');
		}
	}
	if (parts.length === 1 && m === 'POST') {
		if (!validTtl(body.ttlSeconds)) return err(400, 'ttlSeconds must be an integer from 60 to 86400', 'invalid_request');
		const id = `box_${crypto.randomBytes(9).toString('base64url')}`;
		const env = Object.assign({}, body.env || {});
		if (body.noEnv !== true) env.ASCII_API_KEY = KEY;
		const b = { id, state: 'provisioning', ttlSeconds: body.ttlSeconds || 7200, noEnv: body.noEnv === true, createdAt: now() };
		b.processes = new Map();
		b.cid = await containers.create(id, env);
		boxes.set(id, b);
		b.state = 'ready';
		arm(b);
		return { status: 201, body: { box: view(b) } };
	}
	const b = await lookup(parts[1]);
	if (!b) return err(404, `box ${parts[1]} not found`, 'not_found');
	const verb = parts[2];
	if (parts.length === 2 && m === 'GET') return { status: 200, body: { box: view(b) } };
	if (parts.length === 2 && m === 'PATCH') {
		if (!validTtl(body.ttlSeconds)) return err(400, 'ttlSeconds must be an integer from 60 to 86400', 'invalid_request');
		if (b.state === 'ready') arm(b, body.ttlSeconds);
		return { status: 200, body: { box: view(b) } };
	}
	if (parts.length === 2 && m === 'DELETE') {
		if (ctx.headers['x-ascii-confirm-delete'] !== b.id)
			return err(400, 'deleting a box needs X-Ascii-Confirm-Delete: <box id>', 'confirmation_required');
		b.state = 'deleting';
		if (b.timer) clearTimeout(b.timer);
		await containers.remove(b.cid);
		boxes.delete(b.id);
		return { status: 202, body: { box: view(b) } };
	}
	if (verb === 'stop' && m === 'POST') {
		if (b.state === 'ready') {
			b.state = 'archiving';
			if (b.timer) clearTimeout(b.timer);
			await containers.stop(b.cid);
			b.state = 'archived';
			b.desktop = null;
		}
		return { status: 200, body: { box: view(b) } };
	}
	if (verb === 'resume' && m === 'POST') {
		if (!validTtl(body.ttlSeconds)) return err(400, 'ttlSeconds must be an integer from 60 to 86400', 'invalid_request');
		if (b.state !== 'archived') return err(409, `box ${b.id} is ${b.state}, not archived`, 'conflict');
		if (body.noEnv !== true)
			return err(400, 'this box was made with noEnv: resume it with noEnv too', 'invalid_request');
		await containers.start(b.cid);
		b.state = 'ready';
		b.processes = new Map();
		arm(b, body.ttlSeconds);
		return { status: 200, body: { box: view(b) } };
	}
	if (b.state !== 'ready') return err(409, `box ${b.id} is ${b.state}: resume it first`, 'conflict');
	if (verb === 'command' && parts.length === 3 && m === 'POST') {
		if (typeof body.command !== 'string' || !body.command) return err(400, 'command is required', 'invalid_request');
		const c = finishOf(await runCommand(b, body.command, body.cwd));
		if (body.detached) {
			const pid = 1000 + b.processes.size + 1;
			c.pid = pid;
			b.processes.set(pid, c);
			return { status: 200, body: { type: 'command.started', processId: pid } };
		}
		const secs = Math.min(Number(body.timeoutSeconds || 60), 600);
		const timedOut = !(await Promise.race([c.done.then(() => true), C.sleep(secs * 1000).then(() => false)]));
		if (timedOut) c.proc.kill('SIGKILL');
		return {
			status: 200,
			body: {
				type: 'command.finished',
				stdout: Buffer.concat(c.stdout).toString(),
				stderr: Buffer.concat(c.stderr).toString(),
				exitCode: timedOut ? null : c.exitCode,
				timedOut,
			},
		};
	}
	if (verb === 'commands' && parts.length === 4 && m === 'GET') {
		const c = b.processes.get(Number(parts[3]));
		if (!c) return err(404, `process ${parts[3]} not found`, 'not_found');
		const n = Math.max(0, Math.min(Number(ctx.query.get('tailBytes') || 65536), 64 * 1024 * 1024));
		return {
			status: 200,
			body: {
				processId: c.pid,
				pid: c.pid,
				running: c.exitCode === undefined,
				exitCode: c.exitCode === undefined ? null : c.exitCode,
				stdout: tail(c.stdout, n),
				stderr: tail(c.stderr, n),
			},
		};
	}
	if (verb === 'files' && m === 'POST') {
		if (typeof body.path !== 'string' || !body.path.startsWith('/')) return err(400, 'path must be absolute', 'invalid_request');
		if (typeof body.content !== 'string') return err(400, 'content is required', 'invalid_request');
		const data = body.encoding === 'base64' ? Buffer.from(body.content, 'base64') : Buffer.from(body.content);
		if (data.length > 5 * 1024 * 1024) return err(413, 'files over 5 MiB go through commands', 'too_large');
		const q = C.shq(body.path);
		const r = await containers.exec(b.cid, ['bash', '-c', `mkdir -p "$(dirname ${q})" && cat > ${q}`], { input: data });
		if (r.code !== 0) return err(400, `cannot write ${body.path}: ${r.stderr.toString().trim()}`, 'invalid_request');
		return { status: 200, body: { path: body.path, size: data.length } };
	}
	if (verb === 'artifacts' && parts[3] === 'raw' && m === 'GET') {
		const p = ctx.query.get('path') || '';
		if (!p.startsWith('/')) return err(400, 'path must be absolute', 'invalid_request');
		const r = await containers.exec(b.cid, ['bash', '-c', `test -f ${C.shq(p)} || exit 44; cat ${C.shq(p)}`]);
		if (r.code === 44) return err(404, `no file ${p}`, 'not_found');
		if (r.code !== 0) return err(400, r.stderr.toString().trim(), 'invalid_request');
		return { status: 200, headers: { 'content-type': 'application/octet-stream' }, body: r.stdout };
	}
	if (verb === 'desktop' && m === 'POST') {
		const display = body.display === undefined ? 0 : body.display;
		if (display !== 0)
			return err(409, 'a box has one desktop: display 0 only', 'MULTI_SCREEN_UNAVAILABLE');
		if (!b.desktop) {
			const r = await containers.exec(b.cid, ['bash', '-c', 'rakazo-desktop start 0 1920x1080 - >/dev/null']);
			if (r.code !== 0) return err(500, `the desktop did not start: ${r.stderr.toString().trim()}`, 'internal');
			b.desktop = { token: crypto.randomBytes(18).toString('base64url') };
		}
		const url = `https://${b.id.toLowerCase().replace(/_/g, '-')}-6080.on.ascii.dev/vnc.html?_token=${b.desktop.token}`;
		return { status: 200, body: { state: 'ready', vnc: true, publicAccess: false, url } };
	}
	return err(404, `no route ${m} ${ctx.path}`, 'not_found');
}

const handler = route;

async function control(ctx) {
	const parts = ctx.path.split('/').filter(Boolean);
	if (parts[1] === 'requests' && ctx.method === 'GET') return { status: 200, body: requests };
	if (parts[1] === 'requests' && ctx.method === 'DELETE') {
		requests.length = 0;
		return { status: 200, body: { ok: true } };
	}
	if (parts[1] === 'boxes' && parts.length === 2)
		return { status: 200, body: [...boxes.values()].map((b) => Object.assign(view(b), { desktop: !!b.desktop })) };
	if (parts[1] === 'boxes' && parts[3] === 'vanish' && ctx.method === 'POST') {
		const b = boxes.get(parts[2]);
		if (!b) return { status: 404, body: { message: 'no such box' } };
		await containers.remove(b.cid);
		boxes.delete(b.id);
		return { status: 200, body: { ok: true } };
	}
	if (parts[1] === 'boxes' && parts[3] === 'expire' && ctx.method === 'POST') {
		const b = boxes.get(parts[2]);
		if (!b) return { status: 404, body: { message: 'no such box' } };
		await expire(b);
		return { status: 200, body: view(b) };
	}
	return null;
}

const { server } = C.serve({ handler, control, log: requests, port: args.port, portFile: args['port-file'] });
C.cleanupOnExit(containers, server);
