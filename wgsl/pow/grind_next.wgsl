// #import field/mul
// #import field/babybear
// #import pow/params

// The next range of a grind recorded on the GPU (pow/grind.wgsl), so that a search continues
// in the same submission instead of coming back empty-handed: when the range just searched,
// start..end, holds no witness, the next one is end .. end + 2 (end - start) (capped at p) and
// this one thread writes it into the params and the grid for it into `grid`, which the next
// grind dispatch reads (dispatch_workgroups_indirect); otherwise (a witness found, an empty
// range: a stopped chain, or the last candidate reached) the grid is empty and the search stays
// where it ended. Ranges that double keep the first small (about one expected hit: the
// workgroups past a hit cost little) and the chance that all of them miss negligible.

@group(0) @binding(0) var<storage, read_write> params: GrindParams;
@group(0) @binding(1) var<storage, read> best: u32;
@group(0) @binding(2) var<storage, read_write> grid: array<u32, 3>;

// GRID_ROW (a composition constant): workgroups per grid row, under the adapter's
// per-dimension limit (WebGPU: 65,535); tests make it small to cover grids of several rows.

@compute @workgroup_size(1)
fn grind_next() {
    let start = params.search.z;
    let end = params.search.w;
    grid[1] = 1u;
    grid[2] = 1u;
    if (best != 0xffffffffu || end <= start || end >= BB_P) {
        grid[0] = 0u;
        return;
    }
    // end - start < p < 2^31: doubling it cannot wrap.
    let len = min(2u * (end - start), BB_P - end);
    params.search.z = end;
    params.search.w = end + len;
    let groups = (len + 63u) / 64u;
    if (groups <= GRID_ROW) {
        grid[0] = groups;
    } else {
        grid[0] = GRID_ROW;
        grid[1] = (groups + GRID_ROW - 1u) / GRID_ROW;
    }
}
