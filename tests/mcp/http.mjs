// The official MCP TypeScript SDK's Client drives `rakazo serve`'s /mcp over
// Streamable HTTP (StreamableHTTPClientTransport, a bearer token in its
// requestInit) through the scenario in lib.mjs on a docker computer.
// Env: RAKAZO_MCP_DEPS (tests/mcp), RK_URL (the server), RK_TOKEN,
// RK_XCLIENT, RK_NAME.
// Prints "sdk mcp http: N passed, N failed"; exits non-zero on a failure.
import { createRequire } from 'node:module';
import { tally, scenario } from './lib.mjs';

const require = createRequire(process.env.RAKAZO_MCP_DEPS + '/package.json');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

const t = tally('http');
const url = new URL('/mcp', process.env.RK_URL);

// without the token the server refuses the connection itself
{
	const c = new Client({ name: 'rakazo-test', version: '1.0.0' });
	let err = null;
	try {
		await c.connect(new StreamableHTTPClientTransport(url));
	} catch (e) {
		err = e;
	}
	t.check('no token: initialize is refused', err !== null && /401|unauthori/i.test(String(err)), String(err));
	await c.close().catch(() => {});
}

const client = new Client({ name: 'rakazo-test', version: '1.0.0' });
const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${process.env.RK_TOKEN}` } } });
try {
	await client.connect(transport);
	const v = client.getServerVersion();
	t.check('initialize names the server', v && v.name === 'rakazo', v);
	t.check('no session id is minted', !transport.sessionId, transport.sessionId);
	await scenario(client, t, { name: process.env.RK_NAME || 'mcp-http', xclient: process.env.RK_XCLIENT });
} catch (e) {
	t.check('the scenario ran without an exception', false, e.stack || String(e));
} finally {
	await client.close();
}
t.end();
