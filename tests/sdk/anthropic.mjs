// Fidelity: the official @anthropic-ai/sdk against the scripted model server
// on the Messages API (tests/fixtures/scenarios/sdk_anthropic.json). If the
// SDK and the emulator disagree, the emulator is wrong.
//
//   node tests/sdk/anthropic.mjs      (after make model-server and sh tests/sdk/setup.sh)
//
// Prints one line per check and "sdk anthropic: N passed, N failed"; exits
// non-zero on any failure.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { checker, failedAssertions, JPEG_48x32, pngBase64, startEmulator } from './model_emulator.mjs';

const require = createRequire(import.meta.url);
const { Anthropic, BadRequestError, InternalServerError, NotFoundError, toFile } = require('@anthropic-ai/sdk');

const emu = await startEmulator('sdk_anthropic.json');
// no retries: one request per scenario step, a refusal stays one refusal
const client = new Anthropic({ apiKey: 'sk-ant-emulator', baseURL: emu.url, maxRetries: 0 });
const t = checker('anthropic');
const model = 'claude-sonnet-4-6';
const BETA = 'computer-use-2025-11-24';
const computer = { type: 'computer_20251124', name: 'computer', display_width_px: 1280, display_height_px: 800, enable_zoom: true };
const shell = {
	name: 'shell',
	description: 'Run a shell command',
	input_schema: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
};

await t.check('messages.create: a plain round trip', async () => {
	const m = await client.messages.create({
		model,
		max_tokens: 256,
		system: 'You are terse.',
		messages: [{ role: 'user', content: 'Say hello' }],
	});
	assert.equal(m.type, 'message');
	assert.equal(m.role, 'assistant');
	assert.match(m.id, /^msg_01/);
	assert.equal(m.model, model);
	assert.equal(m.content.length, 1);
	assert.equal(m.content[0].type, 'text');
	assert.equal(m.content[0].text, 'Hello! ✓');
	assert.equal(m.stop_reason, 'end_turn');
	assert.ok(m.usage.input_tokens > 0 && m.usage.output_tokens > 0, 'usage counts tokens');
	assert.equal(m.usage.cache_read_input_tokens, 0);
	assert.match(m._request_id, /^req_/);
});

let clickTurn;
await t.check('beta.messages.create: the native computer tool (computer_20251124) comes back as a tool_use', async () => {
	const m = await client.beta.messages.create({
		model,
		max_tokens: 1024,
		betas: [BETA],
		tools: [computer, shell],
		messages: [{ role: 'user', content: 'Click OK' }],
	});
	clickTurn = m;
	assert.equal(m.stop_reason, 'tool_use');
	assert.deepEqual(
		m.content.map((b) => b.type),
		['text', 'tool_use'],
	);
	const use = m.content[1];
	assert.match(use.id, /^toolu_01[0-9A-Za-z]{22}$/);
	assert.equal(use.name, 'computer');
	assert.deepEqual(use.input, { action: 'left_click', coordinate: [641, 399], text: 'ctrl' });
});

const screenshot = pngBase64(1280, 800, 1);
let zoomTurn;
await t.check('a tool_result with a PNG screenshot is accepted; the next calls are parsed', async () => {
	const use = clickTurn.content[1];
	const m = await client.beta.messages.create({
		model,
		max_tokens: 1024,
		betas: [BETA],
		tools: [computer, shell],
		messages: [
			{ role: 'user', content: 'Click OK' },
			{ role: 'assistant', content: clickTurn.content },
			{
				role: 'user',
				content: [
					{
						type: 'tool_result',
						tool_use_id: use.id,
						content: [
							{ type: 'text', text: 'clicked' },
							{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: screenshot } },
						],
					},
				],
			},
		],
	});
	zoomTurn = m;
	assert.deepEqual(
		m.content.map((b) => [b.type, b.name]),
		[
			['tool_use', 'computer'],
			['tool_use', 'shell'],
		],
	);
	assert.deepEqual(m.content[0].input, { action: 'zoom', region: [0, 0, 640, 400] });
	assert.notEqual(m.content[0].id, m.content[1].id);
});

await t.check('both tool results in one user message (a JPEG zoom and a text result) are accepted', async () => {
	const [zoom, sh] = zoomTurn.content;
	const m = await client.beta.messages.create({
		model,
		max_tokens: 1024,
		betas: [BETA],
		tools: [computer, shell],
		messages: [
			{ role: 'user', content: 'Click OK' },
			{ role: 'assistant', content: clickTurn.content },
			{
				role: 'user',
				content: [
					{
						type: 'tool_result',
						tool_use_id: clickTurn.content[1].id,
						content: [
							{ type: 'text', text: 'clicked' },
							{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: screenshot } },
						],
					},
				],
			},
			{ role: 'assistant', content: zoomTurn.content },
			{
				role: 'user',
				content: [
					{
						type: 'tool_result',
						tool_use_id: zoom.id,
						content: [{ type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: JPEG_48x32 } }],
					},
					{ type: 'tool_result', tool_use_id: sh.id, content: 'hi\n' },
				],
			},
		],
	});
	assert.equal(m.content[0].text, 'Done.');
	assert.equal(m.stop_reason, 'end_turn');
});

let streamed;
const clickStreamTools = [computer, shell];
await t.check('beta.messages.stream: thinking, text and two tool_use inputs assembled from partial JSON', async () => {
	const types = [];
	const jsonPieces = [];
	const stream = client.beta.messages.stream({
		model,
		max_tokens: 2048,
		betas: [BETA],
		thinking: { type: 'enabled', budget_tokens: 1024 },
		tools: clickStreamTools,
		messages: [{ role: 'user', content: 'Click OK, then say so' }],
	});
	stream.on('streamEvent', (e) => types.push(e.type));
	stream.on('inputJson', (piece) => jsonPieces.push(piece));
	const m = await stream.finalMessage();
	streamed = m;
	assert.equal(types[0], 'message_start');
	assert.deepEqual(types.slice(-2), ['message_delta', 'message_stop']);
	const blocks = types.filter((x) => x === 'content_block_start').length;
	assert.equal(blocks, 4);
	assert.equal(types.filter((x) => x === 'content_block_stop').length, 4);
	assert.ok(jsonPieces.length >= 6, `several input_json_delta pieces, got ${jsonPieces.length}`);
	assert.deepEqual(
		m.content.map((b) => b.type),
		['thinking', 'text', 'tool_use', 'tool_use'],
	);
	assert.equal(m.content[0].thinking, 'The OK button is at the bottom left.');
	assert.ok(m.content[0].signature.length > 20, 'the thinking block has its signature');
	assert.equal(m.content[1].text, 'Clicking OK.');
	assert.deepEqual(m.content[2].input, { action: 'left_click', coordinate: [12, 34] });
	assert.deepEqual(m.content[3].input, { cmd: 'echo ünïcødé — done', timeout_s: 30 });
	assert.equal(m.stop_reason, 'tool_use');
	assert.ok(m.usage.output_tokens > 1);
});

await t.check('create({stream: true}): the raw events in order; the thinking block goes back with the tool results', async () => {
	const [, , click, sh] = streamed.content;
	const events = await client.beta.messages.create({
		model,
		max_tokens: 2048,
		betas: [BETA],
		thinking: { type: 'enabled', budget_tokens: 1024 },
		tools: clickStreamTools,
		stream: true,
		messages: [
			{ role: 'user', content: 'Click OK, then say so' },
			{ role: 'assistant', content: streamed.content },
			{
				role: 'user',
				content: [
					{ type: 'tool_result', tool_use_id: click.id, content: [{ type: 'text', text: 'clicked' }] },
					{ type: 'tool_result', tool_use_id: sh.id, content: 'ünïcødé — done' },
				],
			},
		],
	});
	const seen = [];
	let text = '';
	for await (const e of events) {
		seen.push(e.type);
		if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
		if (e.type === 'message_delta') assert.equal(e.delta.stop_reason, 'end_turn');
	}
	assert.deepEqual(seen, [
		'message_start',
		'content_block_start',
		'content_block_delta',
		'content_block_stop',
		'message_delta',
		'message_stop',
	]);
	assert.equal(text, 'All done.');
});

await t.check('messages.stream (not beta) with a function tool: finalMessage() parses its input', async () => {
	const stream = client.messages.stream({
		model,
		max_tokens: 512,
		tools: [shell],
		messages: [{ role: 'user', content: 'List /tmp' }],
	});
	let text = '';
	stream.on('text', (d) => (text += d));
	const m = await stream.finalMessage();
	assert.equal(text, 'Listing.');
	const use = m.content.find((b) => b.type === 'tool_use');
	assert.deepEqual(use.input, { cmd: 'ls -l /tmp', env: { LC_ALL: 'C' } });
	assert.equal(m.stop_reason, 'tool_use');
});

await t.check('a native tool without its anthropic-beta is refused: a 500 the SDK raises, naming the check', async () => {
	let caught;
	try {
		await client.beta.messages.create({
			model,
			max_tokens: 256,
			tools: [computer],
			messages: [{ role: 'user', content: 'Click OK' }],
		});
	} catch (e) {
		caught = e;
	}
	assert.ok(caught instanceof InternalServerError, `an InternalServerError, got ${caught}`);
	assert.equal(caught.status, 500);
	assert.match(caught.message, /step 8: assertion failed: anthropic_beta/);
});

// about 1400 tokens, past claude-sonnet-4-6's 1024-token minimum
const rules = 'House rule: answer in one line, and only from these rules. '.repeat(90);
const cachedSystem = [{ type: 'text', text: rules, cache_control: { type: 'ephemeral' } }];
let written;
await t.check('cache_control on the system prompt: the first request writes the prefix', async () => {
	const m = await client.messages.create({
		model,
		max_tokens: 256,
		system: cachedSystem,
		messages: [{ role: 'user', content: 'Which rules apply?' }],
	});
	written = m.usage.cache_creation_input_tokens;
	assert.ok(written >= 1024, `the system prompt is written, got ${JSON.stringify(m.usage)}`);
	assert.equal(m.usage.cache_read_input_tokens, 0);
	assert.deepEqual(m.usage.cache_creation, { ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: written });
	assert.ok(m.usage.input_tokens > 0 && m.usage.input_tokens < 20, 'only the question is uncached input');
});

await t.check('messages.stream with top-level cache_control: message_start reads the prefix and writes the question', async () => {
	let started;
	const stream = client.messages.stream({
		model,
		max_tokens: 256,
		cache_control: { type: 'ephemeral' },
		system: cachedSystem,
		messages: [{ role: 'user', content: 'Which rules apply?' }],
	});
	stream.on('streamEvent', (e) => {
		if (e.type === 'message_start') started = e.message.usage;
	});
	const m = await stream.finalMessage();
	assert.equal(started.cache_read_input_tokens, written);
	assert.ok(started.cache_creation_input_tokens > 0, 'the automatic breakpoint writes the question');
	assert.equal(started.input_tokens, 0, 'nothing after the last breakpoint');
	assert.equal(m.usage.cache_read_input_tokens, written);
	assert.equal(m.usage.cache_creation_input_tokens, started.cache_creation_input_tokens);
});

await t.check('a fifth cache_control is refused: the API\'s 400, a BadRequestError', async () => {
	let caught;
	try {
		await client.messages.create({
			model,
			max_tokens: 256,
			system: cachedSystem,
			messages: [
				{
					role: 'user',
					content: [1, 2, 3, 4].map((i) => ({ type: 'text', text: `part ${i}`, cache_control: { type: 'ephemeral' } })),
				},
			],
		});
	} catch (e) {
		caught = e;
	}
	assert.ok(caught instanceof BadRequestError, `a BadRequestError, got ${caught}`);
	assert.equal(caught.status, 400);
	assert.equal(caught.error.error.type, 'invalid_request_error');
	assert.equal(caught.error.error.message, 'A maximum of 4 blocks with cache_control may be provided. Found 5.');
});

await t.check('a mid-stream error event: the SDK raises the overloaded_error after the text so far', async () => {
	const stream = client.messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Go on' }] });
	let text = '';
	stream.on('text', (d) => (text += d));
	let caught;
	try {
		await stream.finalMessage();
	} catch (e) {
		caught = e;
	}
	assert.ok(caught, 'finalMessage() rejects');
	assert.equal(caught.error?.type, 'error', `the error event's body, got ${caught}`);
	assert.equal(caught.error.error.type, 'overloaded_error');
	assert.ok(text.length > 0 && 'Half of this arrives, then the stream reports it is overloaded.'.startsWith(text), text);
});

// The Files API (beta: the SDK sends the header only when asked). What
// rakazo does with a screenshot: up once, then referred to by id.
const FILES = 'files-api-2025-04-14';
const jpeg = Buffer.from(JPEG_48x32, 'base64');
let deletedId;
await t.check('beta.files.upload without the files beta: the API\'s 400', async () => {
	let caught;
	try {
		await client.beta.files.upload({ file: await toFile(jpeg, 'shot.jpg', { type: 'image/jpeg' }) });
	} catch (e) {
		caught = e;
	}
	assert.ok(caught instanceof BadRequestError, `a BadRequestError, got ${caught}`);
	assert.match(caught.error.error.message, /files-api-2025-04-14/);
});

await t.check('beta.files: upload a screenshot, send it by file id, read its metadata, delete it', async () => {
	const f = await client.beta.files.upload({ file: await toFile(jpeg, 'shot.jpg', { type: 'image/jpeg' }), betas: [FILES] });
	assert.match(f.id, /^file_011C/);
	assert.equal(f.type, 'file');
	assert.equal(f.filename, 'shot.jpg');
	assert.equal(f.mime_type, 'image/jpeg');
	assert.equal(f.size_bytes, jpeg.length);
	assert.ok(!Number.isNaN(Date.parse(f.created_at)), f.created_at);
	const meta = await client.beta.files.retrieveMetadata(f.id, { betas: [FILES] });
	assert.deepEqual(meta, f);
	const listed = [];
	for await (const x of client.beta.files.list({ betas: [FILES] })) listed.push(x.id);
	assert.deepEqual(listed, [f.id]);
	const m = await client.beta.messages.create({
		model,
		max_tokens: 256,
		betas: [FILES],
		messages: [
			{
				role: 'user',
				content: [
					{ type: 'text', text: 'What is in the file?' },
					{ type: 'image', source: { type: 'file', file_id: f.id } },
				],
			},
		],
	});
	assert.equal(m.content[0].text, 'A small picture.');
	assert.ok(m.usage.input_tokens >= 3, 'the image is counted as tokens (48x32 / 750)');
	const gone = await client.beta.files.delete(f.id, { betas: [FILES] });
	assert.deepEqual(gone, { id: f.id, type: 'file_deleted' });
	let caught;
	try {
		await client.beta.files.delete(f.id, { betas: [FILES] });
	} catch (e) {
		caught = e;
	}
	assert.ok(caught instanceof NotFoundError, `a NotFoundError, got ${caught}`);
	deletedId = f.id;
});

await t.check('a message that refers to a deleted file: the API\'s 404, a NotFoundError', async () => {
	let caught;
	try {
		await client.beta.messages.create({
			model,
			max_tokens: 256,
			betas: [FILES],
			messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: deletedId } }] }],
		});
	} catch (e) {
		caught = e;
	}
	assert.ok(caught instanceof NotFoundError, `a NotFoundError, got ${caught}`);
	assert.equal(caught.error.error.type, 'not_found_error');
	assert.equal(caught.error.error.message, `File not found: ${deletedId}`);
});

const { code, report } = await emu.finish();
await t.check('the emulator served every step; its only failures are the refusals above', async () => {
	assert.equal(report.completed, true, JSON.stringify(report));
	assert.equal(report.served, 14);
	assert.deepEqual(failedAssertions(report), [
		'step 8: anthropic_beta: a computer_20251124 tool needs anthropic-beta computer-use-2025-11-24; got "(none)"',
		'step 11: cache_control: A maximum of 4 blocks with cache_control may be provided. Found 5.',
		`step 14: file_id: File not found: ${deletedId}`,
	]);
	assert.equal(report.failures.length, 3);
	assert.equal(code, 1);
	assert.deepEqual(
		report.requests.map((r) => r.protocol),
		Array(14).fill('messages'),
	);
	assert.deepEqual(
		report.requests.slice(8, 11).map((r) => [r.cache_breakpoints, r.status]),
		[
			[1, 200],
			[2, 200],
			[5, 400],
		],
	);
	assert.deepEqual(
		report.requests.slice(12).map((r) => [r.cache_breakpoints, r.status]),
		[
			[0, 200],
			[0, 404],
		],
	);
	// 1.17 marks beta calls internally (__qualifiers) and sends no ?beta=true
	assert.equal(report.requests[1].beta_query, false);
	assert.equal(report.requests[1].anthropic_beta, BETA);
	assert.deepEqual(report.requests[2].last_image, { media_type: 'image/png', width: 1280, height: 800 });
	assert.deepEqual([report.requests[12].file_images, report.requests[12].inline_images], [1, 0]);
	assert.deepEqual(report.files, { uploaded: 1, uploaded_bytes: jpeg.length, deleted: 1, live: 0, duplicate_uploads: 0, referenced: 1 });
});
t.done();
