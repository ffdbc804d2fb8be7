// #import field/mul
// #import field/prime
// #import field/ext

// The wire a masked sumcheck round sends (p3-sumcheck's zk rounds), from the round's pair
// (h(0), h(inf)) as the reduction left it: wire[0] = a + eps * h(0) and wire[1] = b + eps * h(inf),
// where the host passes (eps, a, b) and has written the wire's later entries (the masks' higher
// coefficients). It runs between a round's reduction and a grind set up after observing the wire
// (pow/prepare.wgsl), so a masked round grinds in its own submission.

@group(0) @binding(0) var<storage, read> pair: array<Ext>;
// eps, a, b.
@group(0) @binding(1) var<storage, read> affine: array<Ext>;
@group(0) @binding(2) var<storage, read_write> wire: array<Ext>;

@compute @workgroup_size(1)
fn masked_wire() {
    let eps = affine[0];
    wire[0] = ext_add(affine[1], ext_mul(eps, pair[0]));
    wire[1] = ext_add(affine[2], ext_mul(eps, pair[1]));
}
