//! A progress bar on stderr for long prefills (hidden when stderr is not a terminal, so logs
//! and pipes stay clean).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mlxcel_models::generate::Progress;

/// A bar that appears once a prefill of more than one chunk reports, counting prompt tokens,
/// and clears itself when the prefill is done.
pub fn prefill_bar(what: &'static str) -> Progress {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} {bar:40} {pos}/{len} tokens, {per_sec}, {elapsed} (eta {eta})",
        )
        .expect("a valid template"),
    );
    bar.set_message(what);
    Progress::new(move |done, total| {
        if done >= total {
            // A one-chunk prefill never shows the bar; a longer one clears it.
            if !bar.is_finished() {
                bar.finish_and_clear();
            }
            return;
        }
        // A new prefill (the next turn of a chat) starts the bar again.
        if bar.is_finished() || bar.length() != Some(total as u64) {
            bar.reset();
            bar.set_length(total as u64);
        }
        bar.set_position(done as u64);
    })
}
