// Fidelity of the emulated compaction: the official SDKs' own compaction
// calls against the scripted model server (tests/fixtures/scenarios/
// sdk_compaction.json): @anthropic-ai/sdk's beta.messages.create with
// `compaction` (its tool runner's compactBeforeNextTurn request) and
// openai's responses.compact, then their results sent back as the SDKs'
// types say. If an SDK and the emulator disagree, the emulator is wrong.
//
//   node tests/sdk/compaction.mjs      (after make model-server and sh tests/sdk/setup.sh)
//
// Prints one line per check and "sdk compaction: N passed, N failed".
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { checker, failedAssertions, startEmulator } from './model_emulator.mjs';

const require = createRequire(import.meta.url);
const Anthropic = require('@anthropic-ai/sdk');
const { OpenAI } = require('openai');

const emu = await startEmulator('sdk_compaction.json');
const anthropic = new Anthropic.Anthropic({ apiKey: 'sk-ant-emulator', baseURL: emu.url, maxRetries: 0 });
const openai = new OpenAI({ apiKey: 'sk-emulator', baseURL: `${emu.url}/v1`, maxRetries: 0 });
const t = checker('compaction');
const betas = ['compact-2026-09-04'];
const history = [
	{ role: 'user', content: 'TASK-sdk: do X' },
	{ role: 'assistant', content: 'I did X.' },
	{ role: 'user', content: 'Good. Go on.' },
];
let compacted;

await t.check('beta.messages.create with compaction: one signed compaction block, stop_reason compaction', async () => {
	const m = await anthropic.beta.messages.create({
		model: 'claude-sonnet-4-6',
		max_tokens: 256,
		messages: history,
		compaction: { type: 'summarize' },
		betas,
	});
	assert.equal(m.stop_reason, 'compaction');
	assert.equal(m.content.length, 1);
	assert.equal(m.content[0].type, 'compaction');
	assert.match(m.content[0].content, /^SUMMARY-sdk/);
	assert.ok(m.content[0].signature);
	assert.ok(m.usage.input_tokens > 0);
	compacted = m.content;
});

await t.check('the block sent back first, in place of what it summarises, is accepted', async () => {
	const m = await anthropic.beta.messages.create({
		model: 'claude-sonnet-4-6',
		max_tokens: 256,
		messages: [
			{ role: 'assistant', content: compacted },
			{ role: 'user', content: 'Continue.' },
		],
		betas,
	});
	assert.equal(m.content[0].text, 'going on from the summary');
});

await t.check('a block not first is CompactionBlockMisplacedError', async () => {
	await assert.rejects(
		anthropic.beta.messages.create({
			model: 'claude-sonnet-4-6',
			max_tokens: 256,
			messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: compacted }, { role: 'user', content: 'x' }],
			betas,
		}),
		(e) => e instanceof Anthropic.Anthropic.CompactionBlockMisplacedError && e.errorCode === 'compaction_block_misplaced',
	);
});

await t.check('a block whose content was changed is CompactionContentMismatchError', async () => {
	const changed = [{ ...compacted[0], content: compacted[0].content + ' (edited)' }];
	await assert.rejects(
		anthropic.beta.messages.create({
			model: 'claude-sonnet-4-6',
			max_tokens: 256,
			messages: [{ role: 'assistant', content: changed }, { role: 'user', content: 'x' }],
			betas,
		}),
		(e) => e instanceof Anthropic.Anthropic.CompactionContentMismatchError && e.errorCode === "compaction_content_mismatch",
	);
});

let items;
await t.check('responses.compact: the user messages, then one compaction item', async () => {
	const c = await openai.responses.compact({ model: 'gpt-5', input: history, instructions: 'You are terse.' });
	assert.equal(c.object, 'response.compaction');
	const types = c.output.map((o) => o.type);
	assert.deepEqual(types, ['message', 'message', 'compaction']);
	assert.ok(c.output[2].encrypted_content && c.output[2].id);
	assert.ok(c.usage.input_tokens > 0);
	items = c.output;
});

await t.check('responses.create from the compacted items is accepted', async () => {
	const r = await openai.responses.create({
		model: 'gpt-5',
		store: false,
		input: [...items, { role: 'user', content: 'Continue.' }],
	});
	assert.equal(r.output_text, 'going on from the compacted items');
});

const { code, report } = await emu.finish();
await t.check('the emulator served every step; its only failures are the two refusals', async () => {
	assert.equal(report.completed, true, JSON.stringify(report));
	assert.equal(report.summaries, 2);
	assert.deepEqual(
		failedAssertions(report).map((f) => f.replace(/:.*/, '')),
		['step 2', 'step 3'],
	);
	assert.equal(code, 1);
});
t.done();
