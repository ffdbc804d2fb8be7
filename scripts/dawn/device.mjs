// What the Dawn scripts share: their arguments (NODE_MODULES, the npm package `webgpu`'s
// directory, and a MANIFEST file) and Dawn for Node's first Vulkan adapter (in CI, SwiftShader)
// with a device at WebGPU's default limits and no features, as a browser grants them. Where
// there is no adapter or device it prints {"error": ...} and exits with status 2.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export async function openDawn(script) {
    const [nodeModules, manifestPath] = process.argv.slice(2);
    if (!nodeModules || !manifestPath) {
        console.error(`usage: node ${script} NODE_MODULES MANIFEST`);
        process.exit(2);
    }
    const { create, globals } = await import(pathToFileURL(join(nodeModules, 'webgpu', 'index.js')).href);
    Object.assign(globalThis, globals);
    // The instance must outlive its device: kept in what this returns (a collected instance
    // takes Dawn down with it).
    const gpu = create(['backend=vulkan']);
    const adapter = await gpu.requestAdapter();
    if (!adapter) {
        console.log(JSON.stringify({ error: 'Dawn found no Vulkan adapter' }));
        process.exit(2);
    }
    const device = await adapter.requestDevice();
    // `status.lost` holds the message once the device is lost.
    const status = { lost: null };
    device.lost.then((info) => { status.lost = info.message; });
    const { vendor, architecture, device: name, description } = adapter.info;
    return { gpu, manifestPath, device, status, adapter: { vendor, architecture, device: name, description } };
}
