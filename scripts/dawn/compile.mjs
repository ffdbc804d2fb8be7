// Compiles WGSL kernels with Dawn (Chrome's WebGPU engine; its WGSL compiler is Tint) on the
// first Vulkan adapter it finds (in CI, SwiftShader), at WebGPU's default limits, and builds each
// kernel's compute pipeline. Usage:
//   node scripts/dawn/compile.mjs NODE_MODULES MANIFEST
// NODE_MODULES holds the npm package `webgpu` (Dawn for Node); MANIFEST is a JSON list of
// {"file": "...wgsl", "entry": "..."}. Prints one JSON object: the adapter, and per kernel the
// compiler's messages (errors, warnings, infos) and any pipeline error. Exit status: 0 when every
// kernel compiled with no error and no warning, 1 otherwise, 2 when no adapter or device.
import { readFileSync } from 'node:fs';
import { openDawn } from './device.mjs';

const { gpu, manifestPath, device, status, adapter } = await openDawn('compile.mjs');
// Modules one by one (their messages in order), then every pipeline at once: Dawn compiles them
// on its worker threads.
device.pushErrorScope('validation');
const kernels = JSON.parse(readFileSync(manifestPath, 'utf8')).map(({ file, entry }) => {
    const code = readFileSync(file, 'utf8');
    const started = performance.now();
    return { file, entry, started, module: device.createShaderModule({ code }) };
});
const results = await Promise.all(kernels.map(async ({ file, entry, started, module }) => {
    const compiled = await module.getCompilationInfo();
    const messages = compiled.messages.map((m) => ({ type: m.type, line: m.lineNum, column: m.linePos, message: m.message }));
    let pipelineError = null;
    try {
        await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: entry } });
    } catch (e) {
        pipelineError = String(e.message ?? e);
    }
    const bad = pipelineError !== null || messages.some((m) => m.type === 'error' || m.type === 'warning');
    return { file, entry, messages, pipelineError, ok: !bad, ms: performance.now() - started };
}));
// Validation errors outside the pipelines' own (a module's, say) fail the run too.
const scoped = await device.popErrorScope();
const stray = scoped ? [scoped.message] : [];
const failed = stray.length > 0 || results.some((r) => !r.ok);
console.log(JSON.stringify({ adapter, lost: status.lost, stray, results }));
process.exit(failed || status.lost ? 1 : 0);
