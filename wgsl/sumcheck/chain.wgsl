// #import pow/duplex
// #import sumcheck/chain_state

// The transcript of sumcheck rounds played on the GPU, so a batch of rounds is one submission:
// after each round's reduction `chain_observe` absorbs its two values (h(0), h(inf): 8 words) and
// sets up the round's grind (pow/grind.wgsl, same params layout); after the grind `chain_sample`
// takes the smallest witness, plays `check_witness` (observe the witness, sample the PoW bits)
// and draws the round's challenge (4 samples), which the chained fold binds next. Exactly what
// p3-sumcheck's `ProverTranscript::round` does with a DuplexChallenger; the host replays the
// transcript from the values read back and checks every challenge. A grind that finds no
// witness in its range stops the chain (status 1): later observes, grinds, samples and folds
// return at once (the later rounds' reductions still run, and are ignored), and the host goes
// on round by round from there.

@group(0) @binding(1) var<storage, read_write> chain: ChainState;
@group(0) @binding(2) var<storage, read> observed: array<u32>;
@group(0) @binding(3) var<storage, read_write> params: GrindParams;
@group(0) @binding(4) var<storage, read_write> best: u32;

fn load_duplex() -> Duplex {
    return duplex_load(chain.sponge, chain.pending, chain.info.x);
}

fn store_duplex(d: ptr<function, Duplex>) {
    chain.sponge = duplex_sponge(d);
    chain.pending = duplex_pending(d);
    chain.info.x = (*d).len;
}

// The state as the permutation's four vec4 (no dynamic indexing: stays in registers).
fn load_sponge() -> P2State {
    return P2State(chain.sponge[0], chain.sponge[1], chain.sponge[2], chain.sponge[3]);
}

fn store_sponge(st: P2State) {
    chain.sponge[0] = st.s0;
    chain.sponge[1] = st.s1;
    chain.sponge[2] = st.s2;
    chain.sponge[3] = st.s3;
    chain.pending[0] = vec4<u32>(0u);
    chain.pending[1] = vec4<u32>(0u);
    chain.info.x = 0u;
}

@compute @workgroup_size(1)
fn chain_observe() {
    if (chain.info.y != 0u) {
        // Stopped: the round's grind, next, finds an empty range and returns at once.
        if (chain.info.w != 0u) {
            params.search = vec4<u32>(0u, chain.info.w, 0u, 0u);
        }
        return;
    }
    if (chain.info.x == 0u) {
        // Every round after a chain's first: nothing pending, so the 8 values fill the rate and
        // are absorbed at once (count 8 added to the first capacity slot).
        var st = load_sponge();
        st.s0 = vec4<u32>(observed[0], observed[1], observed[2], observed[3]);
        st.s1 = vec4<u32>(observed[4], observed[5], observed[6], observed[7]);
        st.s2.x = fp_add(st.s2.x, fp_mul(SPONGE_RATE, FP_R2));
        poseidon2_permute(&st);
        store_sponge(st);
        if (chain.info.w != 0u) {
            // GrindState::new with nothing pending: the witness in slot 0, zeros, count 1.
            params.base[0] = vec4<u32>(0u);
            params.base[1] = vec4<u32>(0u);
            params.base[2] = vec4<u32>(fp_add(st.s2.x, FP_ONE), st.s2.y, st.s2.z, st.s2.w);
            params.base[3] = st.s3;
            params.search = vec4<u32>(0u, chain.info.w, 0u, chain.range.x);
            best = 0xffffffffu;
        }
        return;
    }
    var d = load_duplex();
    for (var k = 0u; k < 8u; k++) {
        duplex_observe(&d, observed[k]);
    }
    if (chain.info.w != 0u) {
        params = grind_params(&d, chain.info.w, chain.range.x);
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
    var r: vec4<u32>;
    if (chain.info.w != 0u) {
        let w = best;
        if (w == 0xffffffffu) {
            chain.info.y = 1u;
            return;
        }
        // check_witness: the witness joins the pending inputs and a sample absorbs them all
        // (the grind's base state), popping output 7 for the PoW check; the challenge pops 6..3.
        let slot = params.search.x;
        let wm = fp_mul(w, FP_R2);
        var st = P2State(
            with_witness(params.base[0], 0u, slot, wm),
            with_witness(params.base[1], 1u, slot, wm),
            with_witness(params.base[2], 2u, slot, wm),
            with_witness(params.base[3], 3u, slot, wm),
        );
        poseidon2_permute(&st);
        store_sponge(st);
        r = vec4<u32>(st.s1.z, st.s1.y, st.s1.x, st.s0.w);
    } else if (chain.info.x == 0u) {
        // The observe that filled the rate left its output buffer full: pop 7..4.
        r = vec4<u32>(chain.sponge[1].w, chain.sponge[1].z, chain.sponge[1].y, chain.sponge[1].x);
    } else {
        // A sample with pending inputs absorbs them first.
        var d = load_duplex();
        duplexing(&d);
        store_duplex(&d);
        r = vec4<u32>(d.state[7], d.state[6], d.state[5], d.state[4]);
    }
    chain.r = r;
    chain.info.z += 1u;
}
