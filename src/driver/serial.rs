//! The serial executor: each evaluation in this process, one at a time, in the order given.

use super::guard::Guarded;
use super::{Batch, BlackBox, Evaluation, Executor};
use crate::error::Result;

/// Calls the black box in this process (see the module docs).
pub struct Serial<'f> {
    f: &'f mut dyn BlackBox,
    buffers: Guarded,
}

impl<'f> Serial<'f> {
    /// An executor for f: R^n -> R^m. Its buffers: the m outputs, and a copy of the n inputs
    /// only when f may write its input ([`BlackBox::may_write_input`]). Errors: out of memory
    /// for its buffers.
    pub fn new(f: &'f mut dyn BlackBox, n: usize, m: usize) -> Result<Self> {
        let buffers = Guarded::for_calls_on(f, n, m)?;
        Ok(Serial { f, buffers })
    }
}

impl Executor for Serial<'_> {
    fn capacity(&self) -> usize {
        1
    }

    /// Yes: the black box runs on the caller's thread, and nothing is forked.
    fn tells_alongside(&self) -> bool {
        true
    }

    /// Yes: the guard's output buffer (the m outputs, then the guard zone).
    fn output_buffer(&mut self) -> Option<&mut Vec<f64>> {
        Some(self.buffers.output_buffer())
    }

    fn run(
        &mut self,
        batch: &Batch<'_>,
        done: &mut dyn FnMut(usize, Evaluation<'_>) -> Result<()>,
    ) -> Result<()> {
        for k in 0..batch.len() {
            match self.buffers.call_on(self.f, batch.input(k)) {
                Ok(()) => done(k, Evaluation::Done(self.buffers.output()))?,
                Err(failure) => done(k, Evaluation::Failed(failure))?,
            }
        }
        Ok(())
    }
}
