// The baseline for tests/bench/e2b_bench.c: the vendor's SDK doing the same
// calls against the same emulator sandbox. Prints "exec_rtt MS" and
// "file_rtt MS", medians of N.
//   node tests/sdk/bench-e2b.mjs SANDBOX_ID N   (E2B_* from the environment)
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { Sandbox } = require('e2b');

const [id, n = '20'] = process.argv.slice(2);
const sbx = await Sandbox.connect(id);
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const data = 'x'.repeat(4096);
const exec = [], file = [];
for (let i = 0; i < Number(n); i++) {
	let t = performance.now();
	await sbx.commands.run('true');
	exec.push(performance.now() - t);
	t = performance.now();
	await sbx.files.write('/home/user/rakazo-home/bench.txt', data);
	await sbx.files.read('/home/user/rakazo-home/bench.txt');
	file.push(performance.now() - t);
}
console.log(`exec_rtt ${median(exec).toFixed(1)}`);
console.log(`file_rtt ${median(file).toFixed(1)}`);
