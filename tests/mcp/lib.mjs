// What the MCP scenarios share: the checks tally, a PNG and JPEG reader
// (size and pixels, with node's zlib only), and the scenario itself, run
// by the official SDK's Client over whichever transport the caller gives.
import zlib from 'node:zlib';
import fs from 'node:fs';

export function tally(name) {
	const t = { passed: 0, failed: 0 };
	t.check = (what, ok, detail) => {
		if (ok) t.passed++;
		else {
			t.failed++;
			console.log(`not ok: ${what}${detail !== undefined ? `: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}` : ''}`);
		}
		return ok;
	};
	t.end = () => {
		console.log(`sdk mcp ${name}: ${t.passed} passed, ${t.failed} failed`);
		process.exitCode = t.failed ? 1 : 0;
	};
	return t;
}

// {width, height, pixel(x, y) -> [r, g, b]} of a PNG (8-bit RGB or RGBA, non-interlaced).
export function decodePng(buf) {
	if (buf.subarray(0, 8).toString('latin1') !== '\x89PNG\r\n\x1a\n') throw new Error('not a PNG');
	let off = 8, width = 0, height = 0, depth = 0, ctype = 0;
	const idat = [];
	while (off < buf.length) {
		const len = buf.readUInt32BE(off);
		const type = buf.subarray(off + 4, off + 8).toString('latin1');
		const data = buf.subarray(off + 8, off + 8 + len);
		if (type === 'IHDR') {
			width = data.readUInt32BE(0);
			height = data.readUInt32BE(4);
			depth = data[8];
			ctype = data[9];
		} else if (type === 'IDAT') idat.push(data);
		off += 12 + len;
	}
	if (depth !== 8 || (ctype !== 2 && ctype !== 6)) throw new Error(`PNG depth ${depth} type ${ctype} not read here`);
	const bpp = ctype === 6 ? 4 : 3, stride = width * bpp;
	const raw = zlib.inflateSync(Buffer.concat(idat));
	const px = Buffer.alloc(stride * height);
	for (let y = 0; y < height; y++) {
		const f = raw[y * (stride + 1)];
		const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
		for (let x = 0; x < stride; x++) {
			const a = x >= bpp ? px[y * stride + x - bpp] : 0;
			const b = y > 0 ? px[(y - 1) * stride + x] : 0;
			const c = x >= bpp && y > 0 ? px[(y - 1) * stride + x - bpp] : 0;
			let v = src[x];
			if (f === 1) v += a;
			else if (f === 2) v += b;
			else if (f === 3) v += (a + b) >> 1;
			else if (f === 4) {
				const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
				v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
			}
			px[y * stride + x] = v & 255;
		}
	}
	return { width, height, pixel: (x, y) => [...px.subarray(y * stride + x * bpp, y * stride + x * bpp + 3)] };
}

// {width, height} of a JPEG from its SOF marker.
export function jpegSize(buf) {
	if (buf[0] !== 0xff || buf[1] !== 0xd8) throw new Error('not a JPEG');
	let off = 2;
	while (off < buf.length) {
		if (buf[off] !== 0xff) throw new Error('bad JPEG marker');
		const m = buf[off + 1], len = buf.readUInt16BE(off + 2);
		if (m >= 0xc0 && m <= 0xc3) return { height: buf.readUInt16BE(off + 5), width: buf.readUInt16BE(off + 7) };
		off += 2 + len;
	}
	throw new Error('no SOF in JPEG');
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The image block and structured content of a screen tool's result.
function frame(res) {
	const img = (res.content || []).find((c) => c.type === 'image');
	return { img, meta: res.structuredContent, buf: img ? Buffer.from(img.data, 'base64') : null };
}

function text(res) {
	return (res.content || []).map((c) => c.text || '').join('');
}

// The scenario on a docker computer: create, the X test client, observe
// (decoded, sized), act (a click seen in the pixels), exec, files, delete.
export async function scenario(client, t, opts) {
	const name = opts.name;
	const call = async (tool, args, timeout = 300000) => {
		const r = await client.callTool({ name: tool, arguments: args }, undefined, { timeout });
		return r;
	};
	const tools = await client.listTools();
	const names = tools.tools.map((x) => x.name);
	t.check('tools/list has the computer, screen, shell and file tools',
		['computer_create', 'screen_observe', 'screen_act', 'shell_exec', 'file_read', 'file_write', 'computer_delete'].every((n) => names.includes(n)), names);
	t.check('every tool has an outputSchema', tools.tools.every((x) => x.outputSchema && x.outputSchema.type === 'object'));

	let r = await call('computer_create', { name, provider: 'docker' }, 600000);
	t.check('computer_create succeeds', !r.isError, text(r));
	t.check('the computer runs', r.structuredContent && r.structuredContent.computer.state === 'running', r.structuredContent);
	try {
		r = await call('file_write', { computer: name, path: 'xclient.py', content: fs.readFileSync(opts.xclient, 'utf8') });
		t.check('file_write writes the X client', !r.isError && r.structuredContent.bytes > 1000, text(r));
		// the first look at display 1 starts its desktop, for the client to show on
		r = await call('screen_observe', { computer: `${name}:.1` });
		t.check('screen_observe starts display 1', !r.isError && r.structuredContent.screen_width === 1280, r.structuredContent || text(r));
		// A client started while the display's window manager is still coming
		// up can stay unseen (a black screen, the client ready and mapped): it
		// gets three tries, each polled for its grey canvas.
		let shown = false, started = false, ready = false;
		for (let attempt = 0; attempt < 3 && !shown; attempt++) {
			r = await call('shell_exec', { computer: name, command: 'pkill -f "^python3 xclient.py" ; rm -rf st && mkdir st && DISPLAY=:1 setsid -f python3 xclient.py st --above </dev/null >/dev/null 2>&1; echo started' });
			started = !r.isError && r.structuredContent.exit_code === 0 && r.structuredContent.stdout === 'started\n';
			if (!started) break;
			ready = false;
			for (let i = 0; i < 200 && !ready; i++) {
				r = await call('file_read', { computer: name, path: 'st/ready' });
				ready = !r.isError;
				if (!ready) await sleep(100);
			}
			for (let i = 0; i < 50 && ready && !shown; i++) {
				const g = frame(await call('screen_observe', { computer: `${name}:.1`, max_width: 640, max_height: 400 }));
				shown = g.img && g.img.mimeType === 'image/png' && decodePng(g.buf).pixel(320, 250).join() === '128,128,128';
				if (!shown) await sleep(200);
			}
		}
		t.check('shell_exec starts the X client', started, r.structuredContent || text(r));
		t.check('the X client is ready', ready);

		// observe at a downscaled size: the image is decoded and its size checked
		let grey = false, f;
		for (let i = 0; i < 50 && !grey; i++) {
			f = frame(await call('screen_observe', { computer: `${name}:.1`, max_width: 640, max_height: 400 }));
			if (f.img && f.img.mimeType === 'image/png') {
				const png = decodePng(f.buf);
				grey = png.width === 640 && png.height === 400 && png.pixel(320, 250).join() === '128,128,128';
			}
			if (!grey) await sleep(200);
		}
		if (!t.check('screen_observe gives a 640x400 PNG of the grey client', grey, f && f.meta)) {
			const d = await call('shell_exec', { computer: name, command: 'ps ax | grep -v grep | grep -E "xclient|Xvfb|x11vnc"; ls -la st; cat st/events | tail -5' });
			console.log('diagnostics: ' + JSON.stringify(d.structuredContent));
		}
		t.check('its metadata names the image and the screen', f.meta && f.meta.width === 640 && f.meta.height === 400 &&
			f.meta.screen_width === 1280 && f.meta.screen_height === 800 && f.meta.bytes === f.buf.length, f && f.meta);

		// a click at (150, 150) of the 640x400 image lands on (301, 301), the centre of the screen pixels it covers, as with rakazo screen act
		r = await call('screen_act', { computer: `${name}:.1`, actions: [{ action: 'click', x: 150, y: 150 }], max_width: 640, max_height: 400 });
		t.check('screen_act succeeds with a screenshot', !r.isError && frame(r).img, text(r));
		let events = '';
		for (let i = 0; i < 100 && !events.includes('press 1 301 301'); i++) {
			const e = await call('file_read', { computer: name, path: 'st/events' });
			events = e.isError ? '' : e.structuredContent.content;
			if (!events.includes('press 1 301 301')) await sleep(100);
		}
		t.check('the click is scaled back to the screen exactly (press 1 301 301)', events.includes('press 1 301 301'), events);
		let red = false;
		for (let i = 0; i < 50 && !red; i++) {
			const g = frame(await call('screen_observe', { computer: `${name}:.1`, max_width: 640, max_height: 400 }));
			red = g.img && g.img.mimeType === 'image/png' && decodePng(g.buf).pixel(146, 146).join() === '255,0,0';
			if (!red) await sleep(200);
		}
		t.check('the clicked point turns red in the next screenshot', red);

		// the full screen at the default edge limit (1280x800 fits 2000)
		f = frame(await call('screen_observe', { computer: `${name}:.1` }));
		t.check('a full observe is 1280x800', f.img && (f.img.mimeType === 'image/png' ? decodePng(f.buf).width : jpegSize(f.buf).width) === 1280, f.meta);

		r = await call('shell_exec', { computer: name, command: 'printf out; printf err >&2; exit 7' });
		t.check('shell_exec: exit status, stdout and stderr apart', r.structuredContent && r.structuredContent.exit_code === 7 &&
			r.structuredContent.stdout === 'out' && r.structuredContent.stderr === 'err', r.structuredContent || text(r));
		r = await call('file_write', { computer: name, path: 'notes/a.txt', content: 'from mcp ✓\n' });
		t.check('file_write', !r.isError, text(r));
		r = await call('file_read', { computer: name, path: 'notes/a.txt' });
		t.check('file_read gives it back', !r.isError && r.structuredContent.content === 'from mcp ✓\n', r.structuredContent || text(r));
		r = await call('file_list', { computer: name, path: 'notes' });
		t.check('file_list shows it', !r.isError && r.structuredContent.entries.some((e) => e.name === 'a.txt'), r.structuredContent || text(r));
		r = await call('checkpoint_create', { computer: name, reason: 'sdk' }, 600000);
		const rev = !r.isError && r.structuredContent.id;
		t.check('checkpoint_create', rev && r.structuredContent.reason === 'sdk', r.structuredContent || text(r));
		r = await call('checkpoint_list', { computer: name });
		t.check('checkpoint_list shows it', !r.isError && r.structuredContent.checkpoints.some((c) => c.id === rev), r.structuredContent || text(r));
		r = await call('shell_start', { computer: name, command: 'read x; echo "got $x"' });
		const sid = !r.isError && r.structuredContent.session;
		t.check('shell_start gives a session handle', !!sid, r.structuredContent || text(r));
		r = await call('shell_input', { computer: name, session: sid, input: 'ping\\n', yield_ms: 5000 });
		t.check('shell_input reaches its stdin', !r.isError && r.structuredContent.output.includes('got ping'), r.structuredContent || text(r));
		// the page browser: a page served in the computer, its snapshot's ref clicked
		r = await call('file_write', { computer: name, path: 'site/page.html', content: '<html><head><title>start</title></head><body><button onclick="document.title=\'clicked\'">Go now</button></body></html>' });
		r = await call('shell_exec', { computer: name, command: 'cd site && setsid -f python3 -m http.server 8000 --bind 127.0.0.1 </dev/null >/dev/null 2>&1; for i in $(seq 100); do python3 -c "import urllib.request as u; u.urlopen(\'http://127.0.0.1:8000/page.html\')" 2>/dev/null && exit 0; sleep 0.1; done; exit 1' });
		t.check('a page is served in the computer', !r.isError && r.structuredContent.exit_code === 0, r.structuredContent || text(r));
		r = await call('browser_navigate', { computer: name, url: 'http://127.0.0.1:8000/page.html' }, 120000);
		t.check('browser_navigate opens it', !r.isError, text(r));
		r = await call('browser_snapshot', { computer: name });
		const m = !r.isError && /button "Go now" \[ref=(e\d+)\]/.exec(r.structuredContent.tree || '');
		t.check('browser_snapshot names the button with a ref', !!m, r.structuredContent || text(r));
		if (m) {
			r = await call('browser_act', { computer: name, action: 'click', ref: m[1] });
			t.check('browser_act clicks it', !r.isError, text(r));
			let title = '';
			for (let i = 0; i < 50 && title !== 'clicked'; i++) {
				const snap = await call('browser_snapshot', { computer: name });
				title = snap.isError ? '' : snap.structuredContent.title;
				if (title !== 'clicked') await sleep(100);
			}
			t.check('and the page changed (its title)', title === 'clicked', title);
		}
		if (opts.more) await opts.more(call, name);
	} finally {
		r = await call('computer_delete', { computer: name }, 600000);
		t.check('computer_delete succeeds', !r.isError && r.structuredContent.execution.state === 'succeeded', text(r));
	}
	r = await call('computer_show', { computer: name });
	t.check('the computer is gone', r.isError && text(r).startsWith('not_found'), text(r));
}
