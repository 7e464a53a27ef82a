// Fidelity: the official openai SDK against the scripted model server on the
// Responses API and chat completions (tests/fixtures/scenarios/sdk_openai.json).
// If the SDK and the emulator disagree, the emulator is wrong.
//
//   node tests/sdk/openai.mjs      (after make model-server and sh tests/sdk/setup.sh)
//
// Prints one line per check and "sdk openai: N passed, N failed"; exits
// non-zero on any failure.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { checker, failedAssertions, JPEG_48x32, pngBase64, startEmulator } from './model_emulator.mjs';

const require = createRequire(import.meta.url);
const { OpenAI, BadRequestError, InternalServerError, NotFoundError, toFile } = require('openai');

const emu = await startEmulator('sdk_openai.json');
// no retries: one request per scenario step, a refusal stays one refusal
const client = new OpenAI({ apiKey: 'sk-emulator', baseURL: `${emu.url}/v1`, maxRetries: 0 });
const t = checker('openai');
const model = 'gpt-5.5';
const shell = {
	type: 'function',
	name: 'shell',
	description: 'Run a shell command',
	parameters: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'], additionalProperties: false },
	strict: false,
};

await t.check('responses.create: a plain round trip (store off)', async () => {
	const r = await client.responses.create({ model, instructions: 'Be terse.', input: 'Say hello', store: false });
	assert.match(r.id, /^resp_/);
	assert.equal(r.object, 'response');
	assert.equal(r.status, 'completed');
	assert.equal(r.output_text, 'Hello! ✓');
	assert.equal(r.output.length, 1);
	assert.equal(r.output[0].type, 'message');
	assert.equal(r.output[0].content[0].type, 'output_text');
	assert.equal(r.store, false);
	assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
	assert.equal(r.usage.input_tokens_details.cached_tokens, 0);
	assert.match(r._request_id, /^req_/);
});

const start = [{ role: 'user', content: [{ type: 'input_text', text: 'Click OK and type héllo' }] }];
let click;
await t.check('the GA computer tool: a computer_call with batched actions, reasoning and a pending safety check', async () => {
	click = await client.responses.create({
		model,
		tools: [{ type: 'computer' }, shell],
		input: start,
		store: false,
		reasoning: { effort: 'low' },
		include: ['reasoning.encrypted_content'],
	});
	assert.deepEqual(
		click.output.map((i) => i.type),
		['reasoning', 'computer_call'],
	);
	const [rs, call] = click.output;
	assert.match(rs.id, /^rs_/);
	assert.ok(rs.encrypted_content, 'encrypted_content, as include asked');
	assert.equal(rs.summary[0].text, 'The OK button is bottom left.');
	assert.match(call.call_id, /^call_/);
	assert.deepEqual(call.actions, [
		{ type: 'click', button: 'left', x: 641, y: 399 },
		{ type: 'type', text: 'héllo' },
	]);
	assert.equal(call.action, undefined);
	assert.deepEqual(call.pending_safety_checks, [{ id: 'cu_sc_1', code: 'malicious_instructions', message: 'Check the page first' }]);
	assert.equal(click.output_text, '');
});

const screenshot = `data:image/png;base64,${pngBase64(1024, 640, 3)}`;
let listed, history;
await t.check('computer_call_output with a screenshot and the acknowledged check, replaying the input (store off)', async () => {
	const call = click.output[1];
	history = [
		...start,
		...click.output,
		{
			type: 'computer_call_output',
			call_id: call.call_id,
			output: { type: 'computer_screenshot', image_url: screenshot },
			acknowledged_safety_checks: [{ id: 'cu_sc_1' }],
		},
	];
	listed = await client.responses.create({
		model,
		tools: [{ type: 'computer' }, shell],
		input: history,
		store: false,
		include: ['reasoning.encrypted_content'],
	});
	assert.equal(listed.output[0].type, 'function_call');
	assert.equal(listed.output[0].name, 'shell');
	assert.deepEqual(JSON.parse(listed.output[0].arguments), { cmd: 'ls' });
	assert.match(listed.output[0].id, /^fc_/);
});

let stored;
await t.check('a function_call_output with text and a JPEG (store on)', async () => {
	const call = listed.output[0];
	stored = await client.responses.create({
		model,
		tools: [{ type: 'computer' }, shell],
		input: [
			...history,
			...listed.output,
			{
				type: 'function_call_output',
				call_id: call.call_id,
				output: [
					{ type: 'input_text', text: 'file list' },
					{ type: 'input_image', image_url: `data:image/jpeg;base64,${JPEG_48x32}`, detail: 'auto' },
				],
			},
		],
		store: true,
	});
	assert.equal(stored.store, true);
	assert.equal(stored.output_text, 'One more.');
	assert.equal(stored.output[1].type, 'function_call');
});

await t.check('previous_response_id continues a stored response with just the output', async () => {
	const call = stored.output[1];
	const r = await client.responses.create({
		model,
		tools: [{ type: 'computer' }, shell],
		previous_response_id: stored.id,
		input: [{ type: 'function_call_output', call_id: call.call_id, output: '/root' }],
		store: true,
	});
	assert.equal(r.previous_response_id, stored.id);
	assert.equal(r.output_text, 'Done.');
});

await t.check('responses.stream: events in order, text and arguments deltas, finalResponse()', async () => {
	const types = [];
	const seqs = [];
	let text = '';
	let args = '';
	const stream = client.responses.stream({ model, input: 'stream please', tools: [shell], store: false });
	for await (const e of stream) {
		types.push(e.type);
		seqs.push(e.sequence_number);
		if (e.type === 'response.output_text.delta') text += e.delta;
		if (e.type === 'response.function_call_arguments.delta') args += e.delta;
	}
	const r = await stream.finalResponse();
	assert.deepEqual(types.slice(0, 3), ['response.created', 'response.in_progress', 'response.output_item.added']);
	assert.equal(types.at(-1), 'response.completed');
	assert.deepEqual(
		seqs,
		seqs.map((_, i) => i),
	);
	assert.ok(types.filter((x) => x === 'response.output_text.delta').length >= 2, 'several text deltas');
	assert.ok(types.filter((x) => x === 'response.function_call_arguments.delta').length >= 3, 'several argument deltas');
	assert.ok(types.includes('response.reasoning_summary_text.delta'));
	assert.equal(text, 'Streaming ✓ ünïcødé');
	assert.deepEqual(JSON.parse(args), { cmd: 'echo hi — there', timeout_s: 5 });
	assert.deepEqual(
		r.output.map((i) => i.type),
		['reasoning', 'message', 'function_call'],
	);
	assert.equal(r.output_text, 'Streaming ✓ ünïcødé');
	assert.equal(r.output[2].arguments, args);
	assert.equal(r.status, 'completed');
});

await t.check('create({stream: true}) with computer_use_preview: one action, and the completed response', async () => {
	const events = await client.responses.create({
		model,
		input: 'double click',
		tools: [{ type: 'computer_use_preview', display_width: 1280, display_height: 800, environment: 'linux' }],
		store: false,
		stream: true,
	});
	let done;
	const types = [];
	for await (const e of events) {
		types.push(e.type);
		if (e.type === 'response.completed') done = e.response;
	}
	assert.deepEqual(types, [
		'response.created',
		'response.in_progress',
		'response.output_item.added',
		'response.output_item.done',
		'response.completed',
	]);
	const call = done.output[0];
	assert.equal(call.type, 'computer_call');
	assert.deepEqual(call.action, { type: 'double_click', x: 5, y: 6, keys: null });
	assert.equal(call.actions, undefined);
});

await t.check('chat.completions.create: still the chat protocol', async () => {
	const c = await client.chat.completions.create({
		model,
		messages: [{ role: 'user', content: 'hi' }],
		tools: [{ type: 'function', function: { name: 'shell', parameters: shell.parameters } }],
	});
	assert.equal(c.choices[0].message.content, 'chat ✓');
	assert.equal(c.choices[0].finish_reason, 'stop');
});

await t.check('chat.completions.stream: chunks assemble into finalChatCompletion()', async () => {
	const stream = client.chat.completions.stream({
		model,
		messages: [{ role: 'user', content: 'uname' }],
		tools: [{ type: 'function', function: { name: 'shell', parameters: shell.parameters } }],
		stream_options: { include_usage: true },
	});
	let text = '';
	stream.on('content', (d) => (text += d));
	const c = await stream.finalChatCompletion();
	assert.equal(text, 'Streaming chat.');
	const call = c.choices[0].message.tool_calls[0];
	assert.equal(call.function.name, 'shell');
	assert.deepEqual(JSON.parse(call.function.arguments), { cmd: 'uname -a' });
	assert.equal(c.choices[0].finish_reason, 'tool_calls');
	assert.ok(c.usage && c.usage.prompt_tokens > 0, 'usage in the last chunk');
});

await t.check('an output that answers no call is refused: a 500 the SDK raises, naming the check', async () => {
	let caught;
	try {
		await client.responses.create({
			model,
			input: [{ type: 'function_call_output', call_id: 'call_nobody', output: 'x' }],
			store: false,
		});
	} catch (e) {
		caught = e;
	}
	assert.ok(caught instanceof InternalServerError, `an InternalServerError, got ${caught}`);
	assert.equal(caught.status, 500);
	assert.match(caught.message, /step 10: assertion failed: call_ids_match/);
});

// about 1400 tokens: past the 1024 that caching starts at
const rules = 'House rule: answer in one line, and only from these rules. '.repeat(90);
// Caching is automatic past 1024 tokens, cached_tokens in 128-token steps.
function assertCachedSteps(cached, total) {
	const steps = cached >= 1024 && (cached - 1024) % 128 === 0;
	assert.ok(steps, `cached_tokens in 128-token steps from 1024, got ${cached}`);
	assert.ok(cached <= total && cached > total - 128, `about the whole prompt (${total}) is cached, got ${cached}`);
}

await t.check('responses.create with prompt_cache_key: a repeat reads input_tokens_details.cached_tokens', async () => {
	const ask = () =>
		client.responses.create({ model, instructions: rules, input: 'Which rules apply?', store: false, prompt_cache_key: 'sdk-rules' });
	const first = await ask();
	assert.ok(first.usage.input_tokens >= 1024);
	assert.equal(first.usage.input_tokens_details.cached_tokens, 0);
	const again = await ask();
	assert.equal(again.usage.input_tokens, first.usage.input_tokens, 'input_tokens stays the total');
	assertCachedSteps(again.usage.input_tokens_details.cached_tokens, again.usage.input_tokens);
});

await t.check('chat.completions.create with prompt_cache_key: a repeat reads prompt_tokens_details.cached_tokens', async () => {
	const ask = () =>
		client.chat.completions.create({
			model,
			prompt_cache_key: 'sdk-rules',
			messages: [
				{ role: 'system', content: rules },
				{ role: 'user', content: 'Which rules apply?' },
			],
		});
	const first = await ask();
	assert.equal(first.usage.prompt_tokens_details.cached_tokens, 0);
	const again = await ask();
	assertCachedSteps(again.usage.prompt_tokens_details.cached_tokens, again.usage.prompt_tokens);
});

await t.check('a prompt_cache_key that is not a string is refused: the API\'s 400, a BadRequestError naming the param', async () => {
	let caught;
	try {
		await client.responses.create({ model, input: 'hi', store: false, prompt_cache_key: 42 });
	} catch (e) {
		caught = e;
	}
	assert.ok(caught instanceof BadRequestError, `a BadRequestError, got ${caught}`);
	assert.equal(caught.status, 400);
	assert.equal(caught.param, 'prompt_cache_key');
	assert.equal(caught.code, 'invalid_type');
	assert.equal(caught.type, 'invalid_request_error');
});

await t.check('a mid-stream error event: responses.stream and chat.completions.stream raise it', async () => {
	const stream = client.responses.stream({ model, input: 'go on', store: false });
	let text = '';
	let caught;
	try {
		for await (const e of stream) if (e.type === 'response.output_text.delta') text += e.delta;
		await stream.finalResponse();
	} catch (e) {
		caught = e;
	}
	assert.ok(caught, 'the stream rejects');
	assert.match(String(caught.message), /server_error|The server had an error/, String(caught));
	assert.ok(text.length > 0 && 'Half of this arrives, then the server fails.'.startsWith(text), text);
	caught = undefined;
	try {
		const chat = client.chat.completions.stream({ model, messages: [{ role: 'user', content: 'go on' }] });
		await chat.finalChatCompletion();
	} catch (e) {
		caught = e;
	}
	assert.ok(caught, 'the chat stream rejects');
	assert.match(String(caught.message), /The server had an error/, String(caught));
});

// The Files API: what rakazo does with a screenshot, up once, then by id.
const jpeg = Buffer.from(JPEG_48x32, 'base64');
let deletedId;
await t.check('files.create without a known purpose: the API\'s 400 naming purpose', async () => {
	let caught;
	try {
		await client.files.create({ file: await toFile(jpeg, 'shot.jpg', { type: 'image/jpeg' }), purpose: 'screenshots' });
	} catch (e) {
		caught = e;
	}
	assert.ok(caught instanceof BadRequestError, `a BadRequestError, got ${caught}`);
	assert.equal(caught.param, 'purpose');
});

await t.check('files: create a screenshot with purpose vision, send it as input_image file_id, retrieve, delete', async () => {
	const f = await client.files.create({ file: await toFile(jpeg, 'shot.jpg', { type: 'image/jpeg' }), purpose: 'vision' });
	assert.match(f.id, /^file-/);
	assert.equal(f.object, 'file');
	assert.equal(f.bytes, jpeg.length);
	assert.equal(f.filename, 'shot.jpg');
	assert.equal(f.purpose, 'vision');
	assert.equal(typeof f.created_at, 'number');
	assert.deepEqual(await client.files.retrieve(f.id), f);
	const listed = [];
	for await (const x of client.files.list()) listed.push(x.id);
	assert.deepEqual(listed, [f.id]);
	const r = await client.responses.create({
		model: 'gpt-5.5',
		store: false,
		input: [
			{
				role: 'user',
				content: [
					{ type: 'input_text', text: 'What is in the file?' },
					{ type: 'input_image', file_id: f.id, detail: 'auto' },
				],
			},
		],
	});
	assert.equal(r.output_text, 'A small picture.');
	const gone = await client.files.delete(f.id);
	assert.deepEqual(gone, { id: f.id, object: 'file', deleted: true });
	let caught;
	try {
		await client.files.retrieve(f.id);
	} catch (e) {
		caught = e;
	}
	assert.ok(caught instanceof NotFoundError, `a NotFoundError, got ${caught}`);
	deletedId = f.id;
});

await t.check('an input_image of a deleted file: the API\'s 400, a BadRequestError', async () => {
	let caught;
	try {
		await client.responses.create({
			model: 'gpt-5.5',
			store: false,
			input: [{ role: 'user', content: [{ type: 'input_image', file_id: deletedId, detail: 'auto' }] }],
		});
	} catch (e) {
		caught = e;
	}
	assert.ok(caught instanceof BadRequestError, `a BadRequestError, got ${caught}`);
	assert.equal(caught.error.message, `No file with id '${deletedId}' was found.`);
	assert.equal(caught.param, 'input[0].content');
});

const { code, report } = await emu.finish();
await t.check('the emulator served every step; its only failures are the refusals above', async () => {
	assert.equal(report.completed, true, JSON.stringify(report));
	assert.equal(report.served, 19);
	assert.deepEqual(failedAssertions(report), [
		'step 10: call_ids_match: input item 0: the function_call_output for "call_nobody" answers no call (in the input or via previous_response_id)',
		"step 15: prompt_cache_key: Invalid type for 'prompt_cache_key': expected a string, but got an integer instead.",
		`step 19: file_id: No file with id '${deletedId}' was found.`,
	]);
	assert.equal(code, 1);
	assert.deepEqual(
		report.requests.map((r) => r.protocol),
		[...Array(7).fill('responses'), 'chat', 'chat', 'responses', 'responses', 'responses', 'chat', 'chat', 'responses', 'responses', 'chat', 'responses', 'responses'],
	);
	assert.deepEqual(
		report.requests.slice(10, 15).map((r) => [r.prompt_cache_key, r.status]),
		[
			['sdk-rules', 200],
			['sdk-rules', 200],
			['sdk-rules', 200],
			['sdk-rules', 200],
			[null, 400],
		],
	);
	assert.deepEqual(report.requests[2].last_image, { media_type: 'image/png', width: 1024, height: 640 });
	assert.deepEqual([report.requests[17].file_images, report.requests[17].inline_images, report.requests[18].status], [1, 0, 400]);
	assert.deepEqual(report.files, { uploaded: 1, uploaded_bytes: jpeg.length, deleted: 1, live: 0, duplicate_uploads: 0, referenced: 1 });
});
t.done();
