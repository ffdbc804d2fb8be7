// #import pow/duplex
// #import sumcheck/chain_state

// The transcript of sumcheck rounds played on the GPU, so a batch of rounds is one submission:
// after each round's reduction `chain_observe` absorbs its two values (h(0), h(inf): 8 words) and
// sets up the round's grind (pow/grind.wgsl, same params layout); after the grind `chain_sample`
// takes the smallest witness, plays `check_witness` (observe the witness, sample the PoW bits)
// and draws the round's challenge (4 samples), which the chained fold binds next. Exactly what
// p3-sumcheck's `ProverTranscript::round` does with a DuplexChallenger; the host replays the
// transcript from the values read back and checks every challenge. A grind that finds no
// witness in its range stops the chain (status 1): later kernels return at once, and the host
// goes on round by round from there.

@group(0) @binding(1) var<storage, read_write> chain: ChainState;
@group(0) @binding(2) var<storage, read> observed: array<u32>;
@group(0) @binding(3) var<storage, read_write> params: GrindParams;
@group(0) @binding(4) var<storage, read_write> best: u32;

fn load_duplex() -> Duplex {
    var d: Duplex;
    for (var i = 0u; i < 16u; i++) {
        d.state[i] = chain.sponge[i / 4u][i % 4u];
    }
    for (var i = 0u; i < 8u; i++) {
        d.pending[i] = chain.pending[i / 4u][i % 4u];
    }
    d.len = chain.info.x;
    return d;
}

fn store_duplex(d: ptr<function, Duplex>) {
    for (var i = 0u; i < 16u; i++) {
        chain.sponge[i / 4u][i % 4u] = (*d).state[i];
    }
    for (var i = 0u; i < 8u; i++) {
        chain.pending[i / 4u][i % 4u] = (*d).pending[i];
    }
    chain.info.x = (*d).len;
}

@compute @workgroup_size(1)
fn chain_observe() {
    if (chain.info.y != 0u) {
        return;
    }
    var d = load_duplex();
    for (var k = 0u; k < 8u; k++) {
        duplex_observe(&d, observed[k]);
    }
    if (chain.info.w != 0u) {
        let base = grind_base(&d);
        for (var i = 0u; i < 16u; i++) {
            params.base[i / 4u][i % 4u] = base[i];
        }
        params.search = vec4<u32>(d.len, chain.info.w, 0u, chain.range.x);
        best = 0xffffffffu;
    }
    store_duplex(&d);
}

@compute @workgroup_size(1)
fn chain_sample() {
    // Both entry points bind the same buffers (one bind group layout).
    _ = observed[0];
    if (chain.info.y != 0u) {
        return;
    }
    var d = load_duplex();
    var r: vec4<u32>;
    if (chain.info.w != 0u) {
        let w = best;
        if (w == 0xffffffffu) {
            chain.info.y = 1u;
            return;
        }
        // check_witness: the witness joins the pending inputs and a sample absorbs them all
        // (grind_base's state), popping output 7 for the PoW check; the challenge pops 6..3.
        var s: array<u32, 16>;
        for (var i = 0u; i < 16u; i++) {
            s[i] = params.base[i / 4u][i % 4u];
        }
        s[params.search.x] = bb_mul(w, BB_R2);
        s = permuted(s);
        d.state = s;
        d.len = 0u;
        r = vec4<u32>(s[6], s[5], s[4], s[3]);
    } else {
        // A sample with pending inputs absorbs them first; without, the observe that filled the
        // rate left its output buffer full.
        if (d.len > 0u) {
            duplexing(&d);
        }
        r = vec4<u32>(d.state[7], d.state[6], d.state[5], d.state[4]);
    }
    store_duplex(&d);
    chain.r = r;
    chain.info.z += 1u;
}
