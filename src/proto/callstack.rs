//! `perfetto.protos.Callstack`, written by hand instead of generated: the same message, fields
//! and wire format, decoded faster. heapprofd writes `frame_ids` unpacked (one tag and varint per
//! frame, proto2's default), and the generated decoder grows the list one doubling at a time
//! from 4 (four reallocations for a typical stack): most of a trace's decoding time went there.

use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType, skip_field, uint64};

/// A callstack of interned frames (Perfetto's `Callstack`).
#[derive(Clone, PartialEq, Eq, Hash, Default, Debug)]
pub struct Callstack {
    /// Interning id.
    pub iid: Option<u64>,
    /// Frame iids, outermost (root) first.
    pub frame_ids: Vec<u64>,
}

/// Room reserved for `frame_ids` at its first unpacked entry: most native stacks are shorter.
const FIRST_RESERVE: usize = 32;

impl prost::Message for Callstack {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        if let Some(v) = &self.iid {
            uint64::encode(1, v, buf);
        }
        for v in &self.frame_ids {
            uint64::encode(2, v, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        match tag {
            1 => uint64::merge(wire_type, self.iid.get_or_insert(0), buf, ctx).map_err(|mut e| {
                e.push("Callstack", "iid");
                e
            }),
            2 => {
                if wire_type == WireType::Varint && self.frame_ids.capacity() == 0 {
                    self.frame_ids.reserve(FIRST_RESERVE);
                }
                uint64::merge_repeated(wire_type, &mut self.frame_ids, buf, ctx).map_err(|mut e| {
                    e.push("Callstack", "frame_ids");
                    e
                })
            }
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        self.iid.as_ref().map_or(0, |v| uint64::encoded_len(1, v)) + uint64::encoded_len_repeated(2, &self.frame_ids)
    }

    fn clear(&mut self) {
        self.iid = None;
        self.frame_ids.clear();
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::Callstack;

    /// The message as prost generates it (`packed = "false"`, as the schema says).
    #[derive(Clone, PartialEq, prost::Message)]
    struct Generated {
        #[prost(uint64, optional, tag = "1")]
        iid: Option<u64>,
        #[prost(uint64, repeated, packed = "false", tag = "2")]
        frame_ids: Vec<u64>,
    }

    /// The same, packed: a writer may pack a repeated scalar, and a reader must accept both.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Packed {
        #[prost(uint64, optional, tag = "1")]
        iid: Option<u64>,
        #[prost(uint64, repeated, packed = "true", tag = "2")]
        frame_ids: Vec<u64>,
        #[prost(string, optional, tag = "9")]
        unknown: Option<String>,
    }

    #[test]
    fn reads_and_writes_what_the_generated_message_does() {
        for frames in [vec![], vec![7], (0..100u64).map(|i| i * 1_000_003).collect::<Vec<_>>()] {
            let g = Generated { iid: Some(42), frame_ids: frames.clone() };
            let bytes = g.encode_to_vec();
            let c = Callstack::decode(bytes.as_slice()).unwrap();
            assert_eq!(c, Callstack { iid: Some(42), frame_ids: frames.clone() });
            assert_eq!(c.encode_to_vec(), bytes);
            assert_eq!(c.encoded_len(), bytes.len());
            let p = Packed { iid: None, frame_ids: frames.clone(), unknown: Some("x".into()) }.encode_to_vec();
            assert_eq!(Callstack::decode(p.as_slice()).unwrap(), Callstack { iid: None, frame_ids: frames.clone() });
        }
        // Unpacked and packed runs of one list are concatenated; the last iid wins.
        let mut bytes = Generated { iid: Some(1), frame_ids: vec![1, 2] }.encode_to_vec();
        bytes.extend(Packed { iid: Some(2), frame_ids: vec![3], unknown: None }.encode_to_vec());
        assert_eq!(Callstack::decode(bytes.as_slice()).unwrap(), Callstack { iid: Some(2), frame_ids: vec![1, 2, 3] });
        // A wrong wire type is an error, as in the generated decoder.
        for wrong in [&[0x0d_u8, 0, 0, 0, 0][..], &[0x15, 0, 0, 0, 0]] {
            assert!(Generated::decode(wrong).is_err());
            assert!(Callstack::decode(wrong).is_err());
        }
    }
}
