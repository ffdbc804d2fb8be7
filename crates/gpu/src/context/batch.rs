//! Recording as data: a [`Batch`] is the work for one wait — the command encoder, the buffers
//! it borrows from the pools, and the regions to read back. Operations record into a batch;
//! [`GpuContext::run`] submits it (after any parts handed over early), waits once, reads every
//! region in one transfer and gives the borrowed buffers back, on error paths too. A batch
//! dropped without running gives them back as well: the work it recorded never runs. A batch
//! given a [`KernelTimer`] records each kernel in a pass of its own with timestamps around it.

use super::*;
use crate::error::{GpuError, Result};

/// Work recorded for one wait (see the module docs).
pub struct Batch<'a> {
    ctx: &'a GpuContext,
    label: &'static str,
    encoder: Option<wgpu::CommandEncoder>,
    /// Buffers the batch's work uses and nothing after it: back to the pool when it ends.
    borrowed: Vec<wgpu::Buffer>,
    /// Regions to read back: (buffer, first word, words).
    reads: Vec<(wgpu::Buffer, usize, usize)>,
    read_words: usize,
    timer: Option<KernelTimer>,
}

/// Where a region read by a batch lies in its [`Readback`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadSlot {
    at: usize,
    words: usize,
}

/// The words a batch read back, by [`ReadSlot`].
#[derive(Debug, Default)]
pub struct Readback {
    words: Vec<u32>,
    kernel_times: Vec<(&'static str, f64)>,
}

impl Readback {
    /// The words of `slot`; an error (not a panic) for a slot of another batch that lies past
    /// this readback's end.
    pub fn get(&self, slot: ReadSlot) -> Result<&[u32]> {
        self.words
            .get(slot.at..slot.at + slot.words)
            .ok_or_else(|| GpuError::Device(format!("read slot {}..{} of a {}-word readback", slot.at, slot.at + slot.words, self.words.len())))
    }

    /// The words of `slot`, moved out where the slot is the whole readback (a batch that read
    /// one region), else copied.
    pub fn into_words(self, slot: ReadSlot) -> Result<Vec<u32>> {
        if slot.at == 0 && slot.words == self.words.len() {
            return Ok(self.words);
        }
        self.get(slot).map(<[u32]>::to_vec)
    }

    /// Each kernel a [timed](Batch::timed) batch recorded: its label and GPU time in
    /// nanoseconds, in recording order (empty for an untimed batch).
    pub fn kernel_times(&self) -> &[(&'static str, f64)] {
        &self.kernel_times
    }
}

impl<'a> Batch<'a> {
    /// Records a copy of `words` words from `src` (from word `src_word`) into `dst` (from
    /// word `dst_word`), in order with the work recorded around it.
    pub fn copy_words(&mut self, src: &wgpu::Buffer, src_word: usize, dst: &wgpu::Buffer, dst_word: usize, words: usize) {
        self.encoder().copy_buffer_to_buffer(src, (src_word * 4) as u64, dst, (dst_word * 4) as u64, (words * 4) as u64);
    }

    /// Records zeroing the whole of `buffer`, in order with the work recorded around it.
    pub fn clear(&mut self, buffer: &wgpu::Buffer) {
        self.clear_from(buffer, 0);
    }

    /// Records zeroing `buffer` from byte `from` (a multiple of 4) to its end, in order with the
    /// work recorded around it.
    pub fn clear_from(&mut self, buffer: &wgpu::Buffer, from: u64) {
        self.encoder().clear_buffer(buffer, from, None);
    }

    /// The encoder to record into (commands run in the order recorded). Crate-private: outside
    /// the crate, work is recorded as data (dispatches, copies, reads) the engine submits.
    pub(crate) fn encoder(&mut self) -> &mut wgpu::CommandEncoder {
        let (ctx, label) = (self.ctx, self.label);
        self.encoder.get_or_insert_with(|| ctx.encoder(label))
    }

    /// Times each kernel recorded from now on (a pass each, timestamps around it); the times
    /// come back in the batch's [`Readback::kernel_times`].
    pub fn timed(mut self, timer: KernelTimer) -> Self {
        self.timer = Some(timer);
        self
    }

    /// Whether the batch times its kernels ([`timed`](Self::timed)).
    pub fn is_timed(&self) -> bool {
        self.timer.is_some()
    }

    /// Records `dispatches` in one compute pass labelled with the batch's label.
    pub fn record(&mut self, dispatches: &[Dispatch]) {
        self.record_as(self.label, dispatches);
    }

    /// Records `dispatches` in one compute pass labelled `label` (in a timed batch, a pass
    /// each, timed under `label`).
    pub fn record_as(&mut self, label: &'static str, dispatches: &[Dispatch]) {
        let ctx = self.ctx;
        let encoder = self.encoder.get_or_insert_with(|| ctx.encoder(label));
        match self.timer.as_mut() {
            Some(timer) => {
                for d in dispatches {
                    ctx.record_dispatch(encoder, label, &d.pipeline, &d.bind, d.groups, timer.next(label));
                }
            }
            None => ctx.record_dispatches(encoder, label, dispatches),
        }
    }

    /// A pooled storage buffer of `words` words for this batch's work alone (its contents are
    /// whatever the last user left); back to the pool when the batch ends.
    pub fn scratch(&mut self, label: &str, words: usize) -> wgpu::Buffer {
        let buffer = self.ctx.pooled_storage(label, words);
        self.borrowed.push(buffer.clone());
        buffer
    }

    /// [`scratch`](Self::scratch) holding `words`, written before the batch's work runs.
    pub fn upload(&mut self, label: &str, words: &[u32]) -> wgpu::Buffer {
        let buffer = self.ctx.upload_pooled(label, words);
        self.borrowed.push(buffer.clone());
        buffer
    }

    /// Hands `buffer` to the batch: back to the pool when the batch ends.
    pub fn lend(&mut self, buffer: wgpu::Buffer) {
        self.borrowed.push(buffer);
    }

    /// Hands `buffer` back to the pool at once: work recorded into this batch from now on may
    /// reuse it (commands run in the order recorded, so the work already recorded on it comes
    /// first; other threads get it once the batch is submitted). For transients of a loop that
    /// records a large buffer per step.
    pub fn reuse(&mut self, buffer: wgpu::Buffer) {
        self.ctx.recycle_after_submit(buffer);
    }

    /// Reads `words` words of `src` from word `first` once the batch's work is done (a copy
    /// recorded at the end of the batch, after everything recorded into it).
    pub fn read(&mut self, src: &wgpu::Buffer, first: usize, words: usize) -> ReadSlot {
        let slot = ReadSlot { at: self.read_words, words };
        if words == 0 {
            return slot;
        }
        self.reads.push((src.clone(), first, words));
        self.read_words += words;
        slot
    }

    /// Reads `words` words of `src` from word `first` as they are at this point of the batch
    /// (copied now into a buffer of the batch's own, for a region later work changes).
    pub fn snapshot(&mut self, src: &wgpu::Buffer, first: usize, words: usize) -> ReadSlot {
        let copy = self.scratch("batch snapshot", words);
        self.encoder().copy_buffer_to_buffer(src, (first * 4) as u64, &copy, 0, (words * 4) as u64);
        self.read(&copy, 0, words)
    }

    /// [`read`](Self::read) of several regions, back to back in one slot.
    pub fn read_many(&mut self, regions: &[(&wgpu::Buffer, usize, usize)]) -> ReadSlot {
        let at = self.read_words;
        for (src, first, words) in regions {
            self.read(src, *first, *words);
        }
        ReadSlot { at, words: self.read_words - at }
    }

    /// The encoder with everything recorded so far, for one of the crate's own transfers to
    /// submit (the batch still gives its buffers back when it ends, after that submission).
    pub(crate) fn take_encoder(&mut self) -> wgpu::CommandEncoder {
        let (ctx, label) = (self.ctx, self.label);
        self.encoder.take().unwrap_or_else(|| ctx.encoder(label))
    }

    /// Hands what is recorded so far to the GPU, so it runs while the rest is recorded, where
    /// the context's tuning asks for early submits (`GpuTuning::early_submits`); else nothing.
    pub fn submit_part(&mut self) -> Result<()> {
        if self.ctx.early_submits() {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands what is recorded so far to the GPU now (work that must run before something the
    /// host does next).
    pub fn flush(&mut self) -> Result<()> {
        match self.encoder.take() {
            Some(encoder) => self.ctx.submit(encoder),
            None => Ok(()),
        }
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        for buffer in self.borrowed.drain(..) {
            self.ctx.recycle_storage(buffer);
        }
    }
}

/// A batch submitted and not waited for yet ([`GpuContext::submit_batch`]); finish it with
/// [`GpuContext::finish_batch`]. Dropped unfinished, its buffers are freed rather than pooled.
pub struct InFlight {
    read: Option<PendingRead>,
    borrowed: Vec<wgpu::Buffer>,
    timing: Option<(KernelTimer, ReadSlot)>,
}

impl GpuContext {
    /// An empty batch; record into it and [`run`](Self::run) it.
    pub fn batch(&self, label: &'static str) -> Batch<'_> {
        Batch { ctx: self, label, encoder: None, borrowed: Vec::new(), reads: Vec::new(), read_words: 0, timer: None }
    }

    /// Submits `batch` without waiting (a batch with nothing to read back), and gives its
    /// borrowed buffers back after the submission: later work runs after it.
    pub fn send(&self, mut batch: Batch<'_>) -> Result<()> {
        if !batch.reads.is_empty() || batch.timer.is_some() {
            return Err(GpuError::InvalidInput(format!("a batch reading {} words (or kernel times) back is run or submitted, not sent", batch.read_words)));
        }
        match batch.encoder.take() {
            Some(encoder) => self.submit(encoder),
            None => Ok(()),
        }
    }

    /// [`run`](Self::run) up to its wait: the batch is submitted and its readback requested now,
    /// so work submitted after it (and waited for first) covers the round trip. Reads larger
    /// than a transfer chunk are read at once.
    pub fn submit_batch(&self, mut batch: Batch<'_>) -> Result<InFlight> {
        let (encoder, source, timing) = self.close(&mut batch)?;
        let read = match source {
            None => self.submit(encoder).map(|()| None)?,
            Some((src, words)) => Some(self.submit_then_read(encoder, &src, words)?),
        };
        // From here the buffers wait with the readback (on an error above, `batch` gives them back).
        Ok(InFlight { read, borrowed: std::mem::take(&mut batch.borrowed), timing })
    }

    /// Waits for a [`submit_batch`](Self::submit_batch)'s readback and gives its buffers back.
    pub fn finish_batch(&self, in_flight: InFlight) -> Result<Readback> {
        let InFlight { read, borrowed, timing } = in_flight;
        let words = read.map_or(Ok(Vec::new()), |r| self.finish_read(r));
        borrowed.into_iter().for_each(|b| self.recycle_storage(b));
        self.readback(words?, timing)
    }

    /// Submits `batch`, waits once, reads back every region it asked for (one transfer) and
    /// gives its borrowed buffers back to the pool, whether or not it succeeded.
    pub fn run(&self, mut batch: Batch<'_>) -> Result<Readback> {
        let (encoder, source, timing) = self.close(&mut batch)?;
        let words = match source {
            None => self.submit_and_wait(encoder).map(|()| Vec::new()),
            Some((src, words)) => self.submit_and_read(encoder, &src, words),
        };
        // `batch` drops here: its borrowed buffers go back to the pool after the submission.
        drop(batch);
        self.readback(words?, timing)
    }

    /// The readback of `words`, with the kernel times a timed batch read among them.
    fn readback(&self, words: Vec<u32>, timing: Option<(KernelTimer, ReadSlot)>) -> Result<Readback> {
        let mut readback = Readback { words, kernel_times: Vec::new() };
        if let Some((timer, slot)) = timing {
            readback.kernel_times = timer.times(self, readback.get(slot)?);
        }
        Ok(readback)
    }

    /// The batch's encoder, finished with what its reads need, and the buffer to read back with
    /// how many words: the one region where it starts a buffer, else every region copied into
    /// one buffer of the batch's own, back to back. None: nothing to read. A timed batch's
    /// timestamps are resolved last and read with the rest: its timer and their slot.
    #[allow(clippy::type_complexity)]
    fn close(&self, batch: &mut Batch<'_>) -> Result<(wgpu::CommandEncoder, Option<(wgpu::Buffer, usize)>, Option<(KernelTimer, ReadSlot)>)> {
        let mut encoder = batch.encoder.take().unwrap_or_else(|| self.encoder(batch.label));
        let timing = batch.timer.take().map(|timer| {
            let resolved = timer.resolve(self, &mut encoder);
            let slot = batch.read(&resolved, 0, 4 * timer.kernels());
            (timer, slot)
        });
        let reads = std::mem::take(&mut batch.reads);
        check_reads(&reads)?;
        let source = match reads.as_slice() {
            [] => None,
            [(src, 0, words)] => Some((src.clone(), *words)),
            _ => {
                let gathered = batch.scratch("batch readback", batch.read_words);
                gather_reads(&mut encoder, &reads, &gathered);
                Some((gathered, batch.read_words))
            }
        };
        Ok((encoder, source, timing))
    }
}

/// Every region read lies within its buffer.
fn check_reads(reads: &[(wgpu::Buffer, usize, usize)]) -> Result<()> {
    for (src, first, words) in reads {
        if first.checked_add(*words).and_then(|end| end.checked_mul(4)).is_none_or(|end| end as u64 > src.size()) {
            return Err(GpuError::InvalidInput(format!("reading words {first}..{} of a {}-byte buffer", first.saturating_add(*words), src.size())));
        }
    }
    Ok(())
}

/// Copies every region read into `gathered`, back to back.
fn gather_reads(encoder: &mut wgpu::CommandEncoder, reads: &[(wgpu::Buffer, usize, usize)], gathered: &wgpu::Buffer) {
    let mut at = 0u64;
    for (src, first, words) in reads.iter().filter(|r| r.2 > 0) {
        let bytes = (*words * 4) as u64;
        encoder.copy_buffer_to_buffer(src, (*first * 4) as u64, gathered, at, bytes);
        at += bytes;
    }
}
