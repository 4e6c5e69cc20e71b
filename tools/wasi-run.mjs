// Runs a wasm32-wasi program (build/wasi/mllm.wasm) under node's WASI:
//   node tools/wasi-run.mjs build/wasi/mllm.wasm run -m model.bin ...
// The host's / is preopened as /, so absolute paths mean what they mean
// natively. WASI has no current folder and node's WASI refuses '..'
// segments, so an argument that is relative and names an existing file or
// folder, or that has a '..' segment, is made absolute and normalised here
// (path.resolve) before the program sees it; no other argument is touched
// (a prompt that happens to be the name of a file in the current folder
// would be rewritten too: pass such a text with -f). The exit code is the
// program's. Node 20 prints an ExperimentalWarning for WASI on stderr;
// --no-warnings silences it.
import { readFile } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { WASI } from 'node:wasi';
import { constants } from 'node:os';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

// node 20 crashes (SIGSEGV, inside node, after the program has written all
// its output and exited) in about every run that has read a few MB into the
// module's memory, unless V8 and libuv run without their worker threads:
// seen with a 98 MB GGUF, never under --single-threaded. The module has one
// thread anyway, so the runner restarts itself with that flag.
if (!process.execArgv.includes('--single-threaded')) {
  const r = spawnSync(process.execPath,
    ['--single-threaded', '--no-warnings', ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    { stdio: 'inherit' });
  process.exit(r.status ?? (r.signal ? 128 + (constants.signals[r.signal] ?? 0) : 1));
}

const [wasmPath, ...rawArgs] = process.argv.slice(2);
const args = rawArgs.map((a) =>
  /(^|\/)\.\.(\/|$)/.test(a) || (!isAbsolute(a) && a !== '' && existsSync(a)) ? resolve(a) : a);
if (!wasmPath) {
  process.stderr.write('usage: node tools/wasi-run.mjs PROGRAM.wasm [args...]\n');
  process.exit(2);
}
const wasi = new WASI({
  version: 'preview1',
  args: [wasmPath, ...args],
  env: process.env,
  preopens: { '/': '/' },
  returnOnExit: true,
});
const module = await WebAssembly.compile(await readFile(resolve(wasmPath)));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
process.exitCode = wasi.start(instance);
