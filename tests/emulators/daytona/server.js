#!/usr/bin/env node
'use strict';
// A local Daytona: the subset of its control-plane API (/api/sandbox...) and
// of the in-sandbox toolbox (/toolbox/<id>/process, files, computeruse) that
// rakazo and the official @daytonaio/sdk call, shaped after the OpenAPI
// definitions the SDK's generated clients carry (@daytona/api-client,
// @daytona/toolbox-api-client). Every sandbox is a real local container of
// the rakazo-computer image, so commands, files and the desktop are real.
//
//   node server.js --image IMAGE [--port N] [--port-file F] [--key KEY]
//
// The API key is --key (default: $DAYTONA_API_KEY, else "emulator-key");
// every call needs "Authorization: Bearer KEY". Faults: see common.js.
// Control routes (no auth): GET /_emulator/requests (the request log),
// POST /_emulator/sandboxes/<id>/vanish (the sandbox disappears behind the
// API's back), GET /_emulator/sandboxes.

const crypto = require('crypto');
const C = require('./common.js');

const args = C.parseArgs(process.argv.slice(2));
const IMAGE = args.image || process.env.RAKAZO_IMAGE;
if (!IMAGE) {
	process.stderr.write('daytona emulator: --image is required\n');
	process.exit(2);
}
const KEY = args.key || process.env.DAYTONA_API_KEY || 'emulator-key';
const HOME = '/home/user';
const PRIMARY_DISPLAY = ':0';
const containers = new C.Containers('daytona', IMAGE);
const sandboxes = new Map(); // id -> sandbox record
const requests = []; // {method, path, status}
let base = '';

const now = () => new Date().toISOString();
const err = (status, message, code) => ({ status, body: { statusCode: status, message, code, timestamp: now() } });
const notFound = (id) => err(404, `Sandbox with ID or name ${id} not found`, 'NOT_FOUND');

function dto(s) {
	return {
		id: s.id,
		organizationId: 'org-emulator',
		name: s.name,
		snapshot: s.snapshot,
		user: 'user',
		env: s.env,
		labels: s.labels,
		public: false,
		networkBlockAll: true,
		target: 'local',
		cpu: 1,
		gpu: 0,
		memory: 1,
		disk: 3,
		state: s.state,
		desiredState: s.state === 'archived' ? 'archived' : s.state,
		autoStopInterval: s.autoStopInterval,
		autoArchiveInterval: s.autoArchiveInterval,
		autoDeleteInterval: s.autoDeleteInterval,
		createdAt: s.createdAt,
		updatedAt: s.updatedAt,
		lastActivityAt: s.lastActivityAt,
		daemonVersion: 'emulator',
		toolboxProxyUrl: `${base}/toolbox`,
	};
}

async function lookup(id) {
	let s = sandboxes.get(id);
	if (!s) for (const v of sandboxes.values()) if (v.name === id) s = v;
	if (!s) return null;
	const st = await containers.state(s.cid);
	if (st === 'gone') {
		sandboxes.delete(s.id);
		return null;
	}
	return s;
}

function touch(s) {
	s.updatedAt = now();
	s.lastActivityAt = s.updatedAt;
}

// --- control plane ------------------------------------------------------------

async function api(ctx, parts) {
	const m = ctx.method;
	const json = () => (ctx.body.length ? JSON.parse(ctx.body.toString()) : {});
	if (parts.length === 1 && m === 'POST') {
		const b = json();
		const id = crypto.randomUUID();
		const s = {
			id,
			name: b.name || id,
			snapshot: b.snapshot || 'rakazo-computer',
			env: b.env || {},
			labels: b.labels || {},
			autoStopInterval: b.autoStopInterval ?? 15,
			autoArchiveInterval: b.autoArchiveInterval ?? 10080,
			autoDeleteInterval: b.autoDeleteInterval ?? -1,
			createdAt: now(),
			state: 'creating',
			sessions: new Map(),
			desktop: false,
		};
		touch(s);
		s.cid = await containers.create(id, s.env);
		s.state = 'started';
		sandboxes.set(id, s);
		return { status: 200, body: dto(s) };
	}
	if (parts.length === 1 && m === 'GET') {
		let filter = {};
		try {
			filter = JSON.parse(ctx.query.get('labels') || '{}');
		} catch (e) {
			return err(400, 'labels must be a JSON object');
		}
		const out = [];
		for (const id of [...sandboxes.keys()]) {
			const s = await lookup(id);
			if (s && Object.entries(filter).every(([k, v]) => s.labels[k] === v)) out.push(dto(s));
		}
		return { status: 200, body: out };
	}
	const s = await lookup(parts[1]);
	if (!s) return notFound(parts[1]);
	const verb = parts[2];
	if (parts.length === 2 && m === 'GET') return { status: 200, body: dto(s) };
	if (parts.length === 2 && m === 'DELETE') {
		await containers.remove(s.cid);
		sandboxes.delete(s.id);
		s.state = 'destroyed';
		return { status: 200, body: dto(s) };
	}
	if (verb === 'start' && m === 'POST') {
		if (s.state !== 'started') {
			await containers.start(s.cid);
			s.state = 'started';
			s.desktop = false;
			s.sessions = new Map();
		}
		touch(s);
		return { status: 200, body: dto(s) };
	}
	if (verb === 'stop' && m === 'POST') {
		if (s.state === 'started') {
			await containers.stop(s.cid);
			s.state = 'stopped';
		}
		touch(s);
		return { status: 200, body: dto(s) };
	}
	if (verb === 'archive' && m === 'POST') {
		if (s.state !== 'stopped' && s.state !== 'archived') return err(400, 'Sandbox is not stopped', 'BAD_REQUEST');
		s.state = 'archived';
		touch(s);
		return { status: 200, body: dto(s) };
	}
	if (verb === 'toolbox-proxy-url' && m === 'GET') return { status: 200, body: { url: `${base}/toolbox` } };
	if (verb === 'last-activity' && m === 'POST') {
		touch(s);
		return { status: 201, body: '' };
	}
	if (['autostop', 'autoarchive', 'autodelete'].includes(verb) && m === 'POST') {
		const n = Number(parts[3]);
		if (!Number.isInteger(n)) return err(400, 'interval must be an integer');
		s[{ autostop: 'autoStopInterval', autoarchive: 'autoArchiveInterval', autodelete: 'autoDeleteInterval' }[verb]] =
			n;
		return { status: 201, body: '' };
	}
	if (verb === 'ports' && parts.length >= 5) {
		const port = Number(parts[3]);
		if (!Number.isInteger(port) || port < 1 || port > 65535) return err(400, 'port must be from 1 to 65535');
		const token = crypto.randomBytes(12).toString('base64url');
		const url = `https://${port}-${token}.preview.emulator.invalid`;
		if (parts[4] === 'preview-url' && m === 'GET') return { status: 200, body: { sandboxId: s.id, url, token } };
		if (parts[4] === 'signed-preview-url' && parts.length === 5 && m === 'GET')
			return { status: 200, body: { sandboxId: s.id, port, token, url } };
		if (parts[4] === 'signed-preview-url' && parts[6] === 'expire' && m === 'POST') return { status: 200, body: '' };
	}
	return err(404, `no route ${m} /api/${parts.join('/')}`);
}

// --- toolbox ----------------------------------------------------------------

function requireStarted(s) {
	return s.state === 'started' ? null : err(409, `Sandbox ${s.id} is not started (state ${s.state})`, 'CONFLICT');
}

// Daytona's execute splits the command into words (quotes honoured); it is
// not run by a shell.
function words(cmd) {
	const out = [];
	let cur = null;
	for (let i = 0; i < cmd.length; i++) {
		const c = cmd[i];
		if (c === "'") {
			const j = cmd.indexOf("'", i + 1);
			if (j < 0) throw new Error('unterminated quote');
			cur = (cur || '') + cmd.slice(i + 1, j);
			i = j;
		} else if (c === '"') {
			let j = i + 1;
			let acc = '';
			while (j < cmd.length && cmd[j] !== '"') {
				if (cmd[j] === '\\' && j + 1 < cmd.length) j++;
				acc += cmd[j++];
			}
			if (j >= cmd.length) throw new Error('unterminated quote');
			cur = (cur || '') + acc;
			i = j;
		} else if (c === '\\' && i + 1 < cmd.length) {
			cur = (cur || '') + cmd[++i];
		} else if (/\s/.test(c)) {
			if (cur !== null) out.push(cur);
			cur = null;
		} else cur = (cur || '') + c;
	}
	if (cur !== null) out.push(cur);
	return out;
}

function resolvePath(p) {
	if (!p) return HOME;
	return p.startsWith('/') ? p : `${HOME}/${p}`;
}

async function sh(s, script, input) {
	return containers.exec(s.cid, ['bash', '-c', script], { input, cwd: HOME });
}

function newCommand(s, session, command) {
	const c = { id: crypto.randomUUID(), command, exitCode: undefined, output: [], stdout: [], stderr: [] };
	const p = containers.spawn(s.cid, ['bash', '-c', command], { cwd: HOME });
	c.proc = p;
	p.stdout.on('data', (d) => {
		c.stdout.push(d);
		c.output.push(d);
	});
	p.stderr.on('data', (d) => {
		c.stderr.push(d);
		c.output.push(d);
	});
	p.stdin.on('error', () => {});
	c.done = new Promise((resolve) =>
		p.on('close', (code) => {
			c.exitCode = code === null ? 137 : code;
			resolve();
		}),
	);
	session.commands.set(c.id, c);
	return c;
}

const text = (bufs) => Buffer.concat(bufs).toString('utf8');

async function processRoute(ctx, s, parts) {
	const m = ctx.method;
	const json = () => (ctx.body.length ? JSON.parse(ctx.body.toString()) : {});
	if (parts[1] === 'execute' && m === 'POST') {
		const b = json();
		if (typeof b.command !== 'string' || !b.command) return err(400, 'command is required');
		let argv;
		try {
			argv = words(b.command);
		} catch (e) {
			return err(400, e.message);
		}
		const timeout = Number(b.timeout || 0);
		const run = containers.exec(s.cid, argv, { cwd: b.cwd ? resolvePath(b.cwd) : HOME, env: b.envs || {} });
		const r = timeout > 0 ? await Promise.race([run, C.sleep(timeout * 1000).then(() => null)]) : await run;
		if (!r) return err(408, `command execution timeout after ${timeout} seconds`, 'TIMEOUT');
		return { status: 200, body: { exitCode: r.code, result: Buffer.concat([r.stdout, r.stderr]).toString() } };
	}
	if (parts[1] !== 'session') return err(404, `no route ${m} process/${parts.slice(1).join('/')}`);
	if (parts.length === 2 && m === 'POST') {
		const b = json();
		if (!b.sessionId) return err(400, 'sessionId is required');
		if (s.sessions.has(b.sessionId)) return err(409, `session ${b.sessionId} already exists`, 'CONFLICT');
		s.sessions.set(b.sessionId, { id: b.sessionId, commands: new Map() });
		return { status: 201, body: '' };
	}
	if (parts.length === 2 && m === 'GET')
		return {
			status: 200,
			body: [...s.sessions.values()].map((x) => ({
				sessionId: x.id,
				commands: [...x.commands.values()].map((c) => ({ id: c.id, command: c.command, exitCode: c.exitCode })),
			})),
		};
	const session = s.sessions.get(parts[2]);
	if (!session) return err(404, `session ${parts[2]} not found`, 'NOT_FOUND');
	if (parts.length === 3 && m === 'GET')
		return {
			status: 200,
			body: {
				sessionId: session.id,
				commands: [...session.commands.values()].map((c) => ({ id: c.id, command: c.command, exitCode: c.exitCode })),
			},
		};
	if (parts.length === 3 && m === 'DELETE') {
		for (const c of session.commands.values()) if (c.exitCode === undefined) c.proc.kill('SIGKILL');
		s.sessions.delete(session.id);
		return { status: 204, body: '' };
	}
	if (parts[3] === 'exec' && m === 'POST') {
		const b = json();
		if (typeof b.command !== 'string' || !b.command) return err(400, 'command is required');
		const c = newCommand(s, session, b.command);
		if (b.runAsync || b.async) return { status: 202, body: { cmdId: c.id } };
		await c.done;
		return {
			status: 200,
			body: { cmdId: c.id, exitCode: c.exitCode, output: text(c.output), stdout: text(c.stdout), stderr: text(c.stderr) },
		};
	}
	if (parts[3] === 'command') {
		const c = session.commands.get(parts[4]);
		if (!c) return err(404, `command ${parts[4]} not found`, 'NOT_FOUND');
		if (parts.length === 5 && m === 'GET')
			return { status: 200, body: { id: c.id, command: c.command, exitCode: c.exitCode } };
		if (parts[5] === 'logs' && m === 'GET')
			return { status: 200, body: { output: text(c.output), stdout: text(c.stdout), stderr: text(c.stderr) } };
		if (parts[5] === 'input' && m === 'POST') {
			const b = json();
			if (typeof b.data !== 'string') return err(400, 'data is required');
			if (c.exitCode !== undefined) return err(409, 'command has already exited', 'CONFLICT');
			await new Promise((resolve) => c.proc.stdin.write(b.data, resolve));
			return { status: 200, body: '' };
		}
	}
	return err(404, `no route ${m} process/${parts.slice(1).join('/')}`);
}

function infoOf(line) {
	const [name, type, size, mtime, mode, owner, group] = line.split('\0');
	const isDir = type === 'd';
	const perm = parseInt(mode, 8);
	const rwx = (n) => (n & 4 ? 'r' : '-') + (n & 2 ? 'w' : '-') + (n & 1 ? 'x' : '-');
	const t = new Date(Number(mtime) * 1000).toISOString();
	return {
		name,
		isDir,
		size: Number(size),
		modTime: t,
		modifiedAt: t,
		mode: (isDir ? 'd' : type === 'l' ? 'L' : '-') + rwx(perm >> 6) + rwx(perm >> 3) + rwx(perm),
		permissions: `0${mode}`,
		owner,
		group,
	};
}

const FMT = '%f\\0%y\\0%s\\0%T@\\0%m\\0%u\\0%g\\0\\n';

async function writeFile(s, path, data) {
	const q = C.shq(path);
	const r = await sh(s, `mkdir -p "$(dirname ${q})" && cat > ${q}`, data);
	if (r.code !== 0) return err(400, `cannot write ${path}: ${r.stderr.toString().trim()}`);
	return null;
}

async function filesRoute(ctx, s, parts) {
	const m = ctx.method;
	const path = resolvePath(ctx.query.get('path'));
	const q = C.shq(path);
	const sub = parts[1] || '';
	if (sub === '' && m === 'GET') {
		const r = await sh(s, `test -d ${q} || exit 44; find ${q} -mindepth 1 -maxdepth 1 -printf '${FMT}'`);
		if (r.code === 44) return err(404, `directory not found: ${path}`, 'NOT_FOUND');
		if (r.code !== 0) return err(400, r.stderr.toString().trim());
		const lines = r.stdout.toString().split('\0\n').filter(Boolean);
		return { status: 200, body: lines.map(infoOf) };
	}
	if (sub === 'info' && m === 'GET') {
		const r = await sh(s, `test -e ${q} || exit 44; find ${q} -maxdepth 0 -printf '${FMT}'`);
		if (r.code === 44) return err(404, `file not found: ${path}`, 'NOT_FOUND');
		return { status: 200, body: infoOf(r.stdout.toString().split('\0\n')[0]) };
	}
	if (sub === '' && m === 'DELETE') {
		const rec = ctx.query.get('recursive') === 'true';
		const r = await sh(s, `test -e ${q} || test -L ${q} || exit 44; test -d ${q} && ! ${rec} && exit 45; rm -rf ${q}`);
		if (r.code === 44) return err(404, `file not found: ${path}`, 'NOT_FOUND');
		if (r.code === 45) return err(400, `${path} is a directory: recursive is required`);
		if (r.code !== 0) return err(400, r.stderr.toString().trim());
		return { status: 204, body: '' };
	}
	if (sub === 'download' && m === 'GET') {
		const r = await sh(s, `test -f ${q} || exit 44; cat ${q}`);
		if (r.code === 44) return err(404, `file not found: ${path}`, 'NOT_FOUND');
		if (r.code !== 0) return err(400, r.stderr.toString().trim());
		return { status: 200, headers: { 'content-type': 'application/octet-stream' }, body: r.stdout };
	}
	if ((sub === 'upload' || sub === 'upload-v2') && m === 'POST') {
		const parts2 = C.parseMultipart(ctx.body, ctx.headers['content-type']);
		const f = parts2.find((p) => p.name === 'file');
		if (!f) return err(400, 'multipart field "file" is required');
		return (await writeFile(s, path, f.data)) || { status: 200, body: '' };
	}
	if (sub === 'bulk-upload' && m === 'POST') {
		const ps = C.parseMultipart(ctx.body, ctx.headers['content-type']);
		for (let i = 0; ; i++) {
			const p = ps.find((x) => x.name === `files[${i}].path`);
			const f = ps.find((x) => x.name === `files[${i}].file`);
			if (!p || !f) break;
			const e = await writeFile(s, resolvePath(p.data.toString()), f.data);
			if (e) return e;
		}
		return { status: 200, body: '' };
	}
	if (sub === 'bulk-download' && m === 'POST') {
		const b = JSON.parse(ctx.body.toString() || '{}');
		const boundary = `emulator${crypto.randomBytes(8).toString('hex')}`;
		const chunks = [];
		for (const p of b.paths || []) {
			const r = await sh(s, `test -f ${C.shq(resolvePath(p))} || exit 44; cat ${C.shq(resolvePath(p))}`);
			const ok = r.code === 0;
			const name = ok ? 'file' : 'error';
			const data = ok ? r.stdout : Buffer.from(JSON.stringify({ message: `file not found: ${p}`, statusCode: 404 }));
			chunks.push(
				Buffer.from(
					`--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${p}"\r\n` +
						`Content-Type: ${ok ? 'application/octet-stream' : 'application/json'}\r\n` +
						`Content-Length: ${data.length}\r\n\r\n`,
				),
				data,
				Buffer.from('\r\n'),
			);
		}
		chunks.push(Buffer.from(`--${boundary}--\r\n`));
		return {
			status: 200,
			headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
			body: Buffer.concat(chunks),
		};
	}
	if (sub === 'folder' && m === 'POST') {
		const mode = ctx.query.get('mode') || '755';
		if (!/^[0-7]{3,4}$/.test(mode)) return err(400, 'mode must be octal');
		const r = await sh(s, `mkdir -p -m ${mode} ${q}`);
		return r.code === 0 ? { status: 201, body: '' } : err(400, r.stderr.toString().trim());
	}
	if (sub === 'permissions' && m === 'POST') {
		const mode = ctx.query.get('mode');
		if (mode && !/^[0-7]{3,4}$/.test(mode)) return err(400, 'mode must be octal');
		const r = await sh(s, `test -e ${q} || exit 44; ${mode ? `chmod ${mode} ${q}` : 'true'}`);
		if (r.code === 44) return err(404, `file not found: ${path}`, 'NOT_FOUND');
		return r.code === 0 ? { status: 200, body: '' } : err(400, r.stderr.toString().trim());
	}
	return err(404, `no route ${m} files/${sub}`);
}

// The desktop runs on the primary display; xdotool and ImageMagick inside.
async function x(s, script) {
	return containers.exec(s.cid, ['bash', '-c', script], { env: { DISPLAY: PRIMARY_DISPLAY }, cwd: HOME });
}

const BUTTONS = { left: 1, middle: 2, right: 3 };

async function computerRoute(ctx, s, parts) {
	const m = ctx.method;
	const sub = parts.slice(1).join('/');
	const b = ctx.body.length ? JSON.parse(ctx.body.toString()) : {};
	if (sub === 'start' && m === 'POST') {
		const r = await x(
			s,
			'rakazo-desktop start 0 1280x800 - >/dev/null && ' +
				'{ pgrep -f "rfbport 6080" >/dev/null || setsid x11vnc -display :0 -rfbport 6080 -forever -shared ' +
				'-nopw -quiet >/tmp/x11vnc-6080.log 2>&1 </dev/null & }',
		);
		if (r.code !== 0) return err(500, `computer use did not start: ${r.stderr.toString().trim()}`);
		s.desktop = true;
		const st = { running: true, priority: 100, autoRestart: true };
		return {
			status: 200,
			body: { message: 'Computer use processes started successfully', status: { xvfb: st, xfce4: st, x11vnc: st, novnc: st } },
		};
	}
	if (sub === 'status' && m === 'GET') return { status: 200, body: { status: s.desktop ? 'active' : 'inactive' } };
	if (sub === 'stop' && m === 'POST') {
		await x(s, 'rakazo-desktop stop 0; pkill -f "rfbport 6080"; true');
		s.desktop = false;
		return { status: 200, body: { message: 'Computer use processes stopped successfully', status: {} } };
	}
	if (!s.desktop) return err(409, 'computer use is not started: call /computeruse/start', 'CONFLICT');
	const num = (v, name) => {
		if (typeof v !== 'number' || !Number.isFinite(v)) throw Object.assign(new Error(`${name} must be a number`), { http: 400 });
		return Math.round(v);
	};
	try {
		if (sub === 'screenshot' && m === 'GET') {
			const r = await x(s, 'import -window root png:- && xdotool getmouselocation --shell >&2');
			if (r.code !== 0 || !r.stdout.length) return err(500, `screenshot failed: ${r.stderr.toString().trim()}`);
			const loc = Object.fromEntries(
				r.stderr
					.toString()
					.split('\n')
					.filter((l) => l.includes('='))
					.map((l) => l.split('=')),
			);
			return {
				status: 200,
				body: {
					screenshot: r.stdout.toString('base64'),
					cursorPosition: { x: Number(loc.X || 0), y: Number(loc.Y || 0) },
					sizeBytes: r.stdout.length,
				},
			};
		}
		if (sub === 'display/info' && m === 'GET') {
			const r = await x(s, "xdpyinfo | awk '/dimensions:/{print $2}'");
			const [w, h] = r.stdout.toString().trim().split('x').map(Number);
			return { status: 200, body: { displays: [{ id: 0, x: 0, y: 0, width: w, height: h, isActive: true }] } };
		}
		if (sub === 'mouse/position' && m === 'GET') {
			const r = await x(s, 'xdotool getmouselocation --shell');
			const loc = Object.fromEntries(r.stdout.toString().split('\n').filter(Boolean).map((l) => l.split('=')));
			return { status: 200, body: { x: Number(loc.X), y: Number(loc.Y) } };
		}
		if (sub === 'mouse/move' && m === 'POST') {
			await x(s, `xdotool mousemove ${num(b.x, 'x')} ${num(b.y, 'y')}`);
			return { status: 200, body: { x: b.x, y: b.y } };
		}
		if (sub === 'mouse/click' && m === 'POST') {
			const btn = BUTTONS[b.button || 'left'];
			if (!btn) return err(400, 'button must be left, middle or right');
			await x(s, `xdotool mousemove ${num(b.x, 'x')} ${num(b.y, 'y')} click ${b.double ? '--repeat 2 ' : ''}${btn}`);
			return { status: 200, body: { x: b.x, y: b.y } };
		}
		if (sub === 'mouse/drag' && m === 'POST') {
			const btn = BUTTONS[b.button || 'left'];
			if (!btn) return err(400, 'button must be left, middle or right');
			await x(
				s,
				`xdotool mousemove ${num(b.startX, 'startX')} ${num(b.startY, 'startY')} mousedown ${btn} ` +
					`mousemove ${num(b.endX, 'endX')} ${num(b.endY, 'endY')} mouseup ${btn}`,
			);
			return { status: 200, body: { x: b.endX, y: b.endY } };
		}
		if (sub === 'mouse/scroll' && m === 'POST') {
			const dir = { up: 4, down: 5, left: 6, right: 7 }[b.direction || 'down'];
			if (!dir) return err(400, 'direction must be up, down, left or right');
			const amount = Math.max(1, Math.min(100, Math.round(b.amount || 1)));
			await x(s, `xdotool mousemove ${num(b.x, 'x')} ${num(b.y, 'y')} click --repeat ${amount} ${dir}`);
			return { status: 200, body: { success: true } };
		}
		if (sub === 'keyboard/type' && m === 'POST') {
			if (typeof b.text !== 'string') return err(400, 'text is required');
			const delay = Math.max(0, Math.min(1000, Math.round(b.delay || 0)));
			await x(s, `xdotool type --delay ${delay} -- ${C.shq(b.text)}`);
			return { status: 200, body: '' };
		}
		if (sub === 'keyboard/key' && m === 'POST') {
			if (typeof b.key !== 'string' || !b.key) return err(400, 'key is required');
			const combo = [...(b.modifiers || []), b.key].join('+');
			const r = await x(s, `xdotool key -- ${C.shq(combo)}`);
			if (r.code !== 0) return err(400, `unknown key ${combo}`);
			return { status: 200, body: '' };
		}
		if (sub === 'keyboard/hotkey' && m === 'POST') {
			if (typeof b.keys !== 'string' || !b.keys) return err(400, 'keys is required');
			const r = await x(s, `xdotool key -- ${C.shq(b.keys)}`);
			if (r.code !== 0) return err(400, `unknown keys ${b.keys}`);
			return { status: 200, body: '' };
		}
	} catch (e) {
		if (e.http) return err(e.http, e.message);
		throw e;
	}
	return err(404, `no route ${m} computeruse/${sub}`);
}

async function toolbox(ctx, parts) {
	const s = await lookup(parts[0]);
	if (!s) return notFound(parts[0]);
	const bad = requireStarted(s);
	if (bad) return bad;
	touch(s);
	const area = parts[1];
	const rest = parts.slice(1);
	if (area === 'process') return processRoute(ctx, s, rest);
	if (area === 'files') return filesRoute(ctx, s, rest);
	if (area === 'computeruse') return computerRoute(ctx, s, rest);
	if (area === 'user-home-dir' || area === 'work-dir') return { status: 200, body: { dir: HOME } };
	if (area === 'version') return { status: 200, body: { version: 'emulator' } };
	return err(404, `no toolbox route ${parts.slice(1).join('/')}`);
}

const handler = route;

async function route(ctx) {
	if (ctx.headers.authorization !== `Bearer ${KEY}`)
		return { status: 401, body: { statusCode: 401, message: 'Unauthorized', error: 'Unauthorized' } };
	const parts = ctx.path.split('/').filter(Boolean).map(decodeURIComponent);
	if (parts[0] === 'api' && parts[1] === 'sandbox') return api(ctx, parts.slice(1));
	if (parts[0] === 'toolbox' && parts.length >= 2) return toolbox(ctx, parts.slice(1));
	if (parts[0] === 'api' && parts[1] === 'config') return { status: 200, body: { version: 'emulator' } };
	return err(404, `no route ${ctx.method} ${ctx.path}`);
}

async function control(ctx) {
	const parts = ctx.path.split('/').filter(Boolean);
	if (parts[1] === 'requests' && ctx.method === 'GET') return { status: 200, body: requests };
	if (parts[1] === 'requests' && ctx.method === 'DELETE') {
		requests.length = 0;
		return { status: 200, body: { ok: true } };
	}
	if (parts[1] === 'sandboxes' && parts.length === 2)
		return { status: 200, body: [...sandboxes.values()].map((s) => ({ id: s.id, state: s.state, labels: s.labels })) };
	if (parts[1] === 'sandboxes' && parts[3] === 'vanish' && ctx.method === 'POST') {
		const s = sandboxes.get(parts[2]);
		if (!s) return { status: 404, body: { message: 'no such sandbox' } };
		await containers.remove(s.cid);
		sandboxes.delete(s.id);
		return { status: 200, body: { ok: true } };
	}
	return null;
}

const { server } = C.serve({ handler, control, log: requests, port: args.port, portFile: args['port-file'] });
server.on('listening', () => {
	base = `http://127.0.0.1:${server.address().port}`;
});
C.cleanupOnExit(containers, server);
