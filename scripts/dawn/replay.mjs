// Replays wgpu API traces on Dawn (Chrome's WebGPU engine) and saves what they read back, so
// the Rust tests can compare Dawn's results with Plonky3's. Usage:
//   node scripts/dawn/replay.mjs NODE_MODULES MANIFEST
// NODE_MODULES holds the npm package `webgpu` (Dawn for Node); MANIFEST is a JSON list of
// {"name": "...", "dir": "..."}: each dir holds `actions.json` (wgpu's trace, converted from
// RON by tests/dawn.rs) and the trace's data files. Every trace runs on one device at WebGPU's
// default limits: its buffers, writes, shader modules, pipelines, bind groups and submissions in
// order. After each submission every mappable-for-reading buffer it copied into is read and
// saved as `dir/readback-K.bin`. Prints one JSON object: the adapter and, per trace, its
// readbacks, validation errors and anything the replay could not do. Exit status: 0 when every
// trace replayed with no error, 1 otherwise, 2 when no adapter or device.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDawn } from './device.mjs';

// WebGPU's defaults, as a browser grants them: the traces were recorded in the strict profile.
const { gpu, manifestPath, device, status, adapter } = await openDawn('replay.mjs');
const uncaptured = [];
device.addEventListener('uncapturederror', (e) => uncaptured.push(String(e.error?.message ?? e)));

// wgpu's usage names ("COPY_SRC | STORAGE") as WebGPU flags.
function usageFlags(text) {
    let flags = 0;
    for (const name of text.split('|').map((s) => s.trim()).filter(Boolean)) {
        const flag = GPUBufferUsage[name];
        if (flag === undefined) throw new Error(`unknown buffer usage ${name}`);
        flags |= flag;
    }
    return flags;
}

// The one key of a serde externally tagged enum value, and its contents.
function variant(value) {
    if (typeof value === 'string') return [value, null];
    const keys = Object.keys(value);
    if (keys.length !== 1) throw new Error(`not an enum value: ${JSON.stringify(value).slice(0, 200)}`);
    return [keys[0], value[keys[0]]];
}

const key = (id) => JSON.stringify(id);

async function replay({ name, dir }) {
    const actions = JSON.parse(readFileSync(join(dir, 'actions.json'), 'utf8'));
    const objects = new Map();
    const buffers = new Map(); // key -> { buffer, usage, label }
    const get = (id, what) => {
        const o = objects.get(key(id));
        if (!o) throw new Error(`${what} ${key(id)} used before it was made`);
        return o;
    };
    const getBuffer = (id) => {
        const b = buffers.get(key(id));
        if (!b) throw new Error(`buffer ${key(id)} used before it was made`);
        return b;
    };
    const data = (d) => {
        const [kind, v] = variant(d);
        if (kind === 'File') return readFileSync(join(dir, v));
        throw new Error(`trace data of kind ${kind}`);
    };
    const readbacks = [];
    const problems = [];
    const started = performance.now();
    let submissions = 0;
    let dispatches = 0;
    device.pushErrorScope('validation');
    device.pushErrorScope('out-of-memory');
    try {
        for (const action of actions) {
            const [kind, a] = variant(action);
            switch (kind) {
                case 'Init': {
                    // The trace's device must fit in what this one was given.
                    for (const [limit, wanted] of Object.entries(a.desc.required_limits)) {
                        const have = device.limits[limit];
                        if (have === undefined || typeof wanted !== 'number') continue;
                        const ok = limit.startsWith('min') ? wanted >= have : wanted <= have;
                        if (!ok) problems.push(`the trace's device asked ${limit} = ${wanted}; Dawn's default device has ${have}`);
                    }
                    if (a.desc.required_features && a.desc.required_features !== '') {
                        problems.push(`the trace's device asked for features ${a.desc.required_features}`);
                    }
                    break;
                }
                case 'CreateBuffer': {
                    const [id, desc] = a;
                    let usage = usageFlags(desc.usage);
                    // Writes the trace records as done while mapped (buffers made mapped at
                    // creation) are replayed as queue writes where the buffer cannot be mapped.
                    if (!(usage & (GPUBufferUsage.MAP_READ | GPUBufferUsage.MAP_WRITE))) usage |= GPUBufferUsage.COPY_DST;
                    const buffer = device.createBuffer({ label: desc.label ?? undefined, size: desc.size, usage });
                    buffers.set(key(id), { buffer, usage, label: desc.label ?? '' });
                    break;
                }
                case 'DestroyBuffer':
                    getBuffer(a).buffer.destroy();
                    break;
                case 'WriteBuffer': {
                    const b = getBuffer(a.id);
                    const bytes = data(a.data);
                    if (bytes.length !== a.size) throw new Error(`write of ${a.size} bytes with ${bytes.length} in its file`);
                    if (!a.queued && (b.usage & GPUBufferUsage.MAP_WRITE)) {
                        await b.buffer.mapAsync(GPUMapMode.WRITE);
                        new Uint8Array(b.buffer.getMappedRange()).set(bytes, a.offset);
                        b.buffer.unmap();
                    } else {
                        device.queue.writeBuffer(b.buffer, a.offset, bytes);
                    }
                    break;
                }
                case 'CreateShaderModule': {
                    const code = data(a.data).toString('utf8');
                    const module = device.createShaderModule({ label: a.desc.label ?? undefined, code });
                    const info = await module.getCompilationInfo();
                    for (const m of info.messages.filter((m) => m.type !== 'info')) {
                        problems.push(`${a.desc.label ?? 'a module'}: ${m.type} at ${m.lineNum}:${m.linePos}: ${m.message}`);
                    }
                    objects.set(key(a.id), module);
                    break;
                }
                case 'CreateComputePipeline': {
                    const { desc } = a;
                    const layout = desc.layout ? get(desc.layout, 'pipeline layout') : 'auto';
                    const pipeline = await device.createComputePipelineAsync({
                        label: desc.label ?? undefined,
                        layout,
                        compute: { module: get(desc.stage.module, 'shader module'), entryPoint: desc.stage.entry_point ?? undefined, constants: desc.stage.constants ?? {} },
                    });
                    objects.set(key(a.id), pipeline);
                    break;
                }
                case 'GetComputePipelineBindGroupLayout':
                    objects.set(key(a.id), get(a.pipeline, 'compute pipeline').getBindGroupLayout(a.index));
                    break;
                case 'CreateBindGroup': {
                    const [id, desc] = a;
                    const entries = desc.entries.map((e) => {
                        const [rk, r] = variant(e.resource);
                        if (rk !== 'Buffer') throw new Error(`bind group resource ${rk}`);
                        const resource = { buffer: getBuffer(r.buffer).buffer, offset: r.offset };
                        if (r.size !== null && r.size !== undefined) resource.size = r.size;
                        return { binding: e.binding, resource };
                    });
                    objects.set(key(id), device.createBindGroup({ label: desc.label ?? undefined, layout: get(desc.layout, 'bind group layout'), entries }));
                    break;
                }
                case 'Submit': {
                    const [, commands] = a;
                    const encoder = device.createCommandEncoder();
                    const toRead = [];
                    for (const command of commands) {
                        const [ck, c] = variant(command);
                        switch (ck) {
                            case 'CopyBufferToBuffer': {
                                const dst = getBuffer(c.dst);
                                const size = c.size ?? dst.buffer.size - c.dst_offset;
                                encoder.copyBufferToBuffer(getBuffer(c.src).buffer, c.src_offset, dst.buffer, c.dst_offset, size);
                                if (dst.usage & GPUBufferUsage.MAP_READ) toRead.push({ dst, offset: c.dst_offset, size });
                                break;
                            }
                            case 'ClearBuffer':
                                encoder.clearBuffer(getBuffer(c.dst).buffer, c.offset, c.size ?? undefined);
                                break;
                            case 'RunComputePass': {
                                if (c.timestamp_writes) throw new Error('a compute pass with timestamp writes (the trace was not made in the strict profile)');
                                const pass = encoder.beginComputePass({ label: c.pass.label ?? undefined });
                                for (const pc of c.pass.commands) {
                                    const [pk, p] = variant(pc);
                                    switch (pk) {
                                        case 'SetPipeline': pass.setPipeline(get(p, 'compute pipeline')); break;
                                        case 'SetBindGroup':
                                            if (p.num_dynamic_offsets !== 0) throw new Error('dynamic offsets');
                                            pass.setBindGroup(p.index, p.bind_group ? get(p.bind_group, 'bind group') : null);
                                            break;
                                        case 'DispatchWorkgroups': pass.dispatchWorkgroups(...p); dispatches += 1; break;
                                        case 'PushDebugGroup': case 'PopDebugGroup': case 'InsertDebugMarker': break;
                                        default: throw new Error(`compute pass command ${pk}`);
                                    }
                                }
                                pass.end();
                                break;
                            }
                            case 'PushDebugGroup': case 'PopDebugGroup': case 'InsertDebugMarker': break;
                            default: throw new Error(`command ${ck}`);
                        }
                    }
                    device.queue.submit([encoder.finish()]);
                    submissions += 1;
                    for (const { dst, offset, size } of toRead) {
                        await dst.buffer.mapAsync(GPUMapMode.READ, offset, size);
                        const bytes = new Uint8Array(dst.buffer.getMappedRange(offset, size)).slice();
                        dst.buffer.unmap();
                        const file = `readback-${readbacks.length}.bin`;
                        writeFileSync(join(dir, file), bytes);
                        readbacks.push({ submission: submissions, label: dst.label, file, bytes: bytes.length });
                    }
                    break;
                }
                default:
                    // Drops free nothing here (wgpu keeps what later work uses alive); anything
                    // else a compute trace should not hold.
                    if (!kind.startsWith('Drop')) throw new Error(`trace action ${kind}`);
            }
            if (status.lost) throw new Error(`device lost: ${status.lost}`);
        }
    } catch (e) {
        problems.push(`replay stopped: ${e.message ?? e}`);
    }
    const oom = await device.popErrorScope();
    const validation = await device.popErrorScope();
    for (const e of [validation, oom]) if (e) problems.push(e.message);
    return { name, submissions, dispatches, readbacks, problems, ms: performance.now() - started };
}

const traces = [];
for (const entry of JSON.parse(readFileSync(manifestPath, 'utf8'))) traces.push(await replay(entry));
const failed = uncaptured.length > 0 || status.lost || traces.some((t) => t.problems.length > 0);
console.log(JSON.stringify({ adapter, lost: status.lost, uncaptured, traces }));
process.exit(failed ? 1 : 0);
