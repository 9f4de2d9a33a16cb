//! Memory flame graphs as SVG, drawn by inferno from the profile's folded stacks.
//!
//! The graph labels itself: the title names the process, pid, heap, dump and the value shown;
//! the subtitle gives dump time, sampling interval, total and any data-loss flags; tooltips show
//! byte values in B/KiB/MiB/GiB next to the exact count, not "samples". Search (Ctrl-F) is
//! inferno's. Frame labels follow [`super::labels`]; a `;` inside a label (Go generics:
//! `main.Map[go.shape.int;go.shape.string]`) is passed to inferno, whose input has no escape
//! for it, as a private-use character and put back in the SVG it draws.

use super::folded::{FoldedOptions, folded_lines};
use super::labels::{human_bytes, human_value};
use crate::error::{Error, ErrorKind, Result};
use crate::model::Profile;

/// Options of the flame graph encoder.
#[derive(Debug, Clone)]
pub struct SvgOptions {
    /// Which sample value to draw (index into the profile's sample types). Default: 0.
    pub value_index: usize,
    /// Append ART annotations to frame names. Default: false.
    pub annotations: bool,
    /// Title; `None` derives one from the profile. Default: `None`.
    pub title: Option<String>,
    /// Image width in pixels. Default: 1200.
    pub width: usize,
    /// Draw an icicle graph (roots at the top). Default: false.
    pub inverted: bool,
    /// Hide frames narrower than this many pixels. Default: 0.1.
    pub min_width: f64,
}

impl Default for SvgOptions {
    fn default() -> Self {
        SvgOptions { value_index: 0, annotations: false, title: None, width: 1200, inverted: false, min_width: 0.1 }
    }
}

/// Stands for `;` in inferno's input (which splits frames at `;`), and is turned back into `;`
/// in the SVG inferno draws: a private-use character, which no function name holds.
const SEMICOLON: char = '\u{E03B}';

fn sanitize(label: &str) -> String {
    label.replace(';', &SEMICOLON.to_string()).replace(['\n', '\r'], " ")
}

/// Renders a profile as a flame graph SVG.
pub fn encode_svg(profile: &Profile, opts: &SvgOptions) -> Result<Vec<u8>> {
    let ty = profile
        .header
        .sample_types
        .get(opts.value_index)
        .ok_or_else(|| Error::new(ErrorKind::Usage, format!("value index {} out of range", opts.value_index)))?;
    let bytes = ty.kind.is_bytes() || ty.unit == "bytes";
    let lines = folded_lines(
        profile,
        &FoldedOptions { value_index: opts.value_index, annotations: opts.annotations },
        sanitize,
    );
    let negative = lines.values().any(|&v| v < 0);
    let text: Vec<String> = lines.iter().filter(|(_, v)| **v > 0).map(|(k, v)| format!("{k} {v}")).collect();
    let total: i64 = lines.values().filter(|v| **v > 0).sum();

    let meta = &profile.header.meta;
    let mut fo = inferno::flamegraph::Options::default();
    fo.title = opts.title.clone().unwrap_or_else(|| format!("{}: {}", meta.describe(), ty.name));
    let mut sub = Vec::new();
    if let Some(t) = meta.timestamp {
        sub.push(format!("dump at {t} ns{}", if meta.timestamp_converted { "" } else { " (raw clock)" }));
    }
    if let Some(i) = meta.sampling_interval {
        sub.push(format!("sampling every {}", human_bytes(i64::try_from(i).unwrap_or(i64::MAX))));
    }
    sub.push(format!("total {}", human_value(total, if bytes { "bytes" } else { &ty.unit })));
    if negative {
        sub.push("negative values not drawn".to_owned());
    }
    let loss = meta.flags.data_loss();
    if !loss.is_empty() {
        sub.push(format!("DATA LOSS: {}", loss.join(", ")));
    }
    fo.subtitle = Some(sub.join(" · "));
    fo.count_name = if bytes { "bytes".to_owned() } else { ty.unit.clone() };
    fo.name_type = "Function:".to_owned();
    fo.colors = inferno::flamegraph::Palette::Basic(inferno::flamegraph::color::BasicPalette::Mem);
    fo.deterministic = true;
    fo.hash = true;
    fo.image_width = Some(opts.width);
    fo.min_width = opts.min_width;
    if opts.inverted {
        fo.direction = inferno::flamegraph::Direction::Inverted;
    }
    let mut out = Vec::new();
    if text.is_empty() {
        // inferno refuses empty input; draw an explicit empty graph instead.
        let empty = ["[no data] 1"];
        fo.count_name = "(empty)".to_owned();
        inferno::flamegraph::from_lines(&mut fo, empty.iter().copied(), &mut out)
    } else {
        inferno::flamegraph::from_lines(&mut fo, text.iter().map(|s| s.as_str()), &mut out)
    }
    .map_err(|e| Error::new(ErrorKind::Io, "drawing the flame graph").with_source(e))?;
    if lines.keys().any(|k| k.contains(SEMICOLON)) {
        out = String::from_utf8_lossy(&out).replace(SEMICOLON, ";").into_bytes();
    }
    if bytes {
        out = humanize_titles(&out);
    }
    Ok(out)
}

/// Rewrites `(1,234,567 bytes, 12.34%)` in tooltips to `(1.18 MiB, 1,234,567 bytes, 12.34%)`.
fn humanize_titles(svg: &[u8]) -> Vec<u8> {
    let s = String::from_utf8_lossy(svg);
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    let mut rest: &str = &s;
    const PAT: &str = " bytes, ";
    while let Some(i) = rest.find(PAT) {
        let head = &rest[..i];
        let start = head.rfind('(').map(|p| p + 1).unwrap_or(head.len());
        let digits = &head[start..];
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit() || b == b',') {
            let n: i64 = digits.replace(',', "").parse().unwrap_or(0);
            out.push_str(&head[..start]);
            out.push_str(&human_bytes(n));
            out.push_str(", ");
            out.push_str(digits);
        } else {
            out.push_str(head);
        }
        out.push_str(PAT);
        rest = &rest[i + PAT.len()..];
    }
    out.push_str(rest);
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::humanize_titles;

    #[test]
    fn titles_get_units() {
        let got =
            humanize_titles(b"<title>malloc (1,572,864 bytes, 50.00%)</title><title>all (10 bytes, 100%)</title>");
        assert_eq!(
            String::from_utf8(got).unwrap(),
            "<title>malloc (1.50 MiB, 1,572,864 bytes, 50.00%)</title><title>all (10 B, 10 bytes, 100%)</title>"
        );
    }
}
