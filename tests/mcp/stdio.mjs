// The official MCP TypeScript SDK's Client drives `rakazo mcp` over stdio
// (StdioClientTransport) through the scenario in lib.mjs on a docker
// computer, then a second server with a small image byte limit.
// Env: RAKAZO_BIN, RAKAZO_MCP_DEPS (tests/mcp), RK_XCLIENT, RK_NAME.
// Prints "sdk mcp stdio: N passed, N failed"; exits non-zero on a failure.
import { createRequire } from 'node:module';
import { tally, scenario, decodePng, jpegSize } from './lib.mjs';

const require = createRequire(process.env.RAKAZO_MCP_DEPS + '/package.json');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const t = tally('stdio');

async function connect(args) {
	const client = new Client({ name: 'rakazo-test', version: '1.0.0' });
	const transport = new StdioClientTransport({ command: process.env.RAKAZO_BIN, args: ['mcp', ...args], env: { ...process.env }, stderr: 'inherit' });
	await client.connect(transport);
	return client;
}

const client = await connect([]);
try {
	const v = client.getServerVersion();
	t.check('initialize names the server', v && v.name === 'rakazo', v);
	t.check('the SDK agreed a handshake version', ['2025-11-25', '2025-06-18'].includes(client.transport.protocolVersion || '2025-11-25'));
	await scenario(client, t, {
		name: process.env.RK_NAME || 'mcp-sdk',
		xclient: process.env.RK_XCLIENT,
		more: async (call, name) => {
			// a host with a small byte limit gets a JPEG that fits, sized as the metadata says
			const small = await connect(['--max-image-bytes', '4096']);
			try {
				const r = await small.callTool({ name: 'screen_observe', arguments: { computer: `${name}:.1` } });
				const img = (r.content || []).find((c) => c.type === 'image');
				const buf = img ? Buffer.from(img.data, 'base64') : Buffer.alloc(0);
				t.check('under --max-image-bytes 4096 the image fits', img && buf.length <= 4096, r.structuredContent);
				const size = img && (img.mimeType === 'image/jpeg' ? jpegSize(buf) : decodePng(buf));
				t.check('and its size is what the metadata says', size && size.width === r.structuredContent.width && size.height === r.structuredContent.height,
					[size, r.structuredContent]);
			} finally {
				await small.close();
			}
		},
	});
} catch (e) {
	t.check('the scenario ran without an exception', false, e.stack || String(e));
} finally {
	await client.close();
}
t.end();
