//! Writes DDM allocation records (`REAL` captures) byte by byte: the blob, the DDM chunk around
//! it and the JDWP packets around that. heapconv itself never writes DDM captures: these let
//! tests, fuzz seeds and benchmarks build captures, and round trips check the decoder
//! (`heapconv::decode::ddm_alloc_records`, whose module docs describe the format).

use heapconv::decode::ddm_alloc_records::{
    AllocRecords, BlobLayout, STANDARD_ENTRY_HEADER_LEN, STANDARD_FRAME_LEN, STANDARD_HEADER_LEN,
};

/// Writes `records` as a blob with the given layout (extra bytes of longer headers, entries
/// and frames are zeros) and entry count (`None`: the number of entries, cut to 16 bits as
/// the VMs do). It checks nothing, so it also writes broken blobs on purpose.
pub fn encode_alloc_records(records: &AllocRecords, layout: &BlobLayout, count_field: Option<u16>) -> Vec<u8> {
    let hl = usize::from(layout.header_len.max(STANDARD_HEADER_LEN));
    let el = usize::from(layout.entry_header_len.max(STANDARD_ENTRY_HEADER_LEN));
    let fl = usize::from(layout.frame_len.max(STANDARD_FRAME_LEN));
    let mut out = vec![0u8; hl];
    out[0] = layout.header_len;
    out[1] = layout.entry_header_len;
    out[2] = layout.frame_len;
    let count = count_field.unwrap_or(records.entries.len() as u16);
    out[3..5].copy_from_slice(&count.to_be_bytes());
    out[9..11].copy_from_slice(&(records.class_names.len() as u16).to_be_bytes());
    out[11..13].copy_from_slice(&(records.method_names.len() as u16).to_be_bytes());
    out[13..15].copy_from_slice(&(records.file_names.len() as u16).to_be_bytes());
    for e in &records.entries {
        let start = out.len();
        out.extend_from_slice(&e.size.to_be_bytes());
        out.extend_from_slice(&e.thread.to_be_bytes());
        out.extend_from_slice(&e.class.to_be_bytes());
        out.push(e.depth);
        out.resize(start + el, 0);
        for f in records.entry_frames(e) {
            let start = out.len();
            out.extend_from_slice(&f.class.to_be_bytes());
            out.extend_from_slice(&f.method.to_be_bytes());
            out.extend_from_slice(&f.file.to_be_bytes());
            out.extend_from_slice(&f.line.to_be_bytes());
            out.resize(start + fl, 0);
        }
    }
    let st = out.len() as u32;
    out[5..9].copy_from_slice(&st.to_be_bytes());
    for table in [&records.class_names, &records.method_names, &records.file_names] {
        for s in table {
            put_string(&mut out, s);
        }
    }
    if !records.thread_names.is_empty() {
        out.extend_from_slice(&(records.thread_names.len() as u32).to_be_bytes());
        for (id, name) in &records.thread_names {
            out.extend_from_slice(&id.to_be_bytes());
            put_string(&mut out, name);
        }
    }
    out
}

fn put_string(out: &mut Vec<u8>, s: &str) {
    let units: Vec<u16> = s.encode_utf16().collect();
    out.extend_from_slice(&(units.len() as u32).to_be_bytes());
    for u in units {
        out.extend_from_slice(&u.to_be_bytes());
    }
}

/// Wraps `data` in a DDM chunk of type `ty`.
pub fn wrap_ddm_chunk(ty: [u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 8);
    out.extend_from_slice(&ty);
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
    out
}

/// Wraps `payload` in a JDWP reply packet (flags 0x80, error `error`).
pub fn wrap_jdwp_reply(id: u32, error: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 11);
    out.extend_from_slice(&((payload.len() + 11) as u32).to_be_bytes());
    out.extend_from_slice(&id.to_be_bytes());
    out.push(0x80);
    out.extend_from_slice(&error.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// Wraps `payload` in a JDWP command packet of DDM's command set (0xC7, command 1): the
/// host's request for recent allocations is `REAL` with no data.
pub fn wrap_jdwp_ddm_command(id: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 11);
    out.extend_from_slice(&((payload.len() + 11) as u32).to_be_bytes());
    out.extend_from_slice(&id.to_be_bytes());
    out.push(0);
    out.push(0xC7);
    out.push(0x01);
    out.extend_from_slice(payload);
    out
}

#[cfg(test)]
mod tests {
    use heapconv::decode::ddm_alloc_records::{CHUNK_REAL, DdmKind, sniff_ddm};

    use super::*;

    #[test]
    fn framings_are_written_as_the_decoder_sniffs_them() {
        let blob = encode_alloc_records(&AllocRecords::default(), &BlobLayout::default(), None);
        assert_eq!(blob, [0x0F, 9, 8, 0, 0, 0, 0, 0, 15, 0, 0, 0, 0, 0, 0]);
        assert_eq!(sniff_ddm(&blob), Some(DdmKind::Blob));
        let chunk = wrap_ddm_chunk(CHUNK_REAL, &blob);
        assert_eq!(chunk, [&b"REAL"[..], &[0, 0, 0, 15], &blob].concat());
        assert_eq!(sniff_ddm(&chunk), Some(DdmKind::Chunk));
        let reply = wrap_jdwp_reply(7, 0, &chunk);
        assert_eq!(reply, [&[0, 0, 0, 34, 0, 0, 0, 7, 0x80, 0, 0][..], &chunk].concat());
        assert_eq!(sniff_ddm(&reply), Some(DdmKind::Jdwp));
        let request = wrap_jdwp_ddm_command(7, &wrap_ddm_chunk(CHUNK_REAL, &[]));
        assert_eq!(request, [&[0, 0, 0, 19, 0, 0, 0, 7, 0, 0xC7, 0x01][..], b"REAL", &[0, 0, 0, 0]].concat());
        assert_eq!(sniff_ddm(&request), Some(DdmKind::Jdwp));
        let long = encode_alloc_records(
            &AllocRecords::default(),
            &BlobLayout { header_len: 16, entry_header_len: 12, frame_len: 10 },
            None,
        );
        assert_eq!(long, [16, 12, 10, 0, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(sniff_ddm(&long), Some(DdmKind::Blob));
    }
}
