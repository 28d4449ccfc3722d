//! Helpers shared by the fuzz targets that check RESP frames.

use robit_sim::redis::resp::Frame;

/// The frame as it comes back from the encoder: a CR or LF in a status or error line is
/// sent as a space.
pub fn normalised(frame: &Frame) -> Frame {
    let line = |text: &[u8]| -> Vec<u8> {
        text.iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect()
    };
    match frame {
        Frame::Simple(text) => Frame::Simple(line(text)),
        Frame::Error(text) => Frame::Error(line(text)),
        Frame::Array(items) => Frame::Array(items.iter().map(normalised).collect()),
        other => other.clone(),
    }
}

/// How deep arrays nest in `frame` (1 for an array of scalars).
pub fn depth(frame: &Frame) -> usize {
    match frame {
        Frame::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}
