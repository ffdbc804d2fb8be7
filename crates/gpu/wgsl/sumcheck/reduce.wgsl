// #import util/dispatch
// #import field/mul
// #import field/prime
// #import field/ext

// Sums of pairs of extension values over a workgroup: each thread brings (a, b), thread 0
// ends with the workgroup's totals. Shared by the sumcheck reductions.

const REDUCE_THREADS: u32 = 256u;

// (Over degree 8 these two arrays take 16 KiB, all of WebGPU's default workgroup memory: a
// kernel importing this file can add no workgroup variable of its own.)

var<workgroup> reduce_a: array<Ext, 256>;
var<workgroup> reduce_b: array<Ext, 256>;

fn workgroup_sum_pair(lid: u32, a: Ext, b: Ext) -> array<Ext, 2> {
    reduce_a[lid] = a;
    reduce_b[lid] = b;
    workgroupBarrier();
    for (var s = REDUCE_THREADS / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            reduce_a[lid] = ext_add(reduce_a[lid], reduce_a[lid + s]);
            reduce_b[lid] = ext_add(reduce_b[lid], reduce_b[lid + s]);
        }
        workgroupBarrier();
    }
    return array<Ext, 2>(reduce_a[0], reduce_b[0]);
}
