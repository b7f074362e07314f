//! The NaN payload codec: how an input id is written into a NaN and read back out of an output.
//!
//! # Layout (binary64)
//!
//! ```text
//!  63 | 62 ........ 52 | 51 | 50 ............ 29 | 28 ............. 0
//! sign| exponent = 7FF |  q |   id (22 bits)      |  check (29 bits)
//! ```
//!
//! The design follows the measurements in `shared/NAN_FACTS.md`:
//!
//! * Only quiet NaNs are emitted (bit 51 set): a signalling NaN raises `FE_INVALID` and traps
//!   under `feenableexcept`.
//! * The id lives in bits 50..29 because a `double -> float -> double` round trip keeps exactly
//!   those 22 bits. Bits 28..0 hold a check value derived from the id, which is not
//!   all-zero for any id. An output whose low 29 bits are all zero went through a `float`: its id
//!   is accepted from the high bits and reported as [`Decoded::ViaFloat`].
//! * Decoding ignores the sign bit (`-x`, `fabs`, `copysign` and OpenBLAS change it) and the
//!   quiet bit (a signalling NaN made by the black box is quieted by arithmetic).
//! * Id 0 is never emitted. The default NaNs (`0/0` gives `FFF8000000000000`, `NAN` gives
//!   `7FF8000000000000`) have payload 0 and decode to [`Decoded::Unknown`]: a NaN made inside the
//!   black box. A payload whose check does not match its id decodes to `Unknown` too.
//! * Decoding uses integer bit tests only, never `is_nan`, so it does not depend on how this crate
//!   was compiled.
//!
//! # Single precision
//!
//! A binary32 quiet NaN has 22 payload bits (21..0): the id fills them with no room for a check.
//! `float -> double` shifts those bits left by 29, which is why the binary64 id sits where it does:
//! [`encode_f32`] followed by a widening conversion decodes, in binary64, as `ViaFloat(id)`.
//!
//! # What a decoded value proves
//!
//! `Tagged(id)` or `ViaFloat(id)` in output `i` proves that the input carrying `id` reaches `y_i`.
//! It says nothing about the other tagged inputs of the same probe: which of several NaNs survives
//! an operation is the compiler's and the CPU's choice (NAN_FACTS §1).

/// Largest id the codec can carry: 22 bits.
pub const MAX_ID: u32 = (1 << 22) - 1;

const EXP_MASK_64: u64 = 0x7FF0_0000_0000_0000;
const FRAC_MASK_64: u64 = 0x000F_FFFF_FFFF_FFFF;
const QUIET_64: u64 = 0x0008_0000_0000_0000;
const PAYLOAD_MASK_64: u64 = 0x0007_FFFF_FFFF_FFFF; // bits 50..0
const ID_SHIFT_64: u32 = 29;
const CHECK_MASK_64: u64 = (1 << ID_SHIFT_64) - 1; // bits 28..0

const EXP_MASK_32: u32 = 0x7F80_0000;
const FRAC_MASK_32: u32 = 0x007F_FFFF;
const QUIET_32: u32 = 0x0040_0000;
const PAYLOAD_MASK_32: u32 = 0x003F_FFFF; // bits 21..0

/// What an output value says about the tagged inputs of a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// Not a NaN (a finite number or an infinity).
    NotNan,
    /// A NaN carrying `id` with a matching check: that input reaches this output.
    Tagged(u32),
    /// A NaN carrying `id` whose check bits are all zero: it went through a `float` on the way.
    /// As good a proof as `Tagged`, but worth reporting.
    ViaFloat(u32),
    /// A NaN with payload 0 (made inside the black box) or with a check that does not match:
    /// it proves nothing about which input reached the output.
    Unknown,
}

impl Decoded {
    /// The id carried, if any.
    pub fn id(self) -> Option<u32> {
        match self {
            Decoded::Tagged(id) | Decoded::ViaFloat(id) => Some(id),
            Decoded::NotNan | Decoded::Unknown => None,
        }
    }
}

/// The 29-bit check value of an id: a multiplicative hash, never zero.
fn check(id: u32) -> u64 {
    let h = (u64::from(id)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let c = (h >> 35) & CHECK_MASK_64;
    if c == 0 {
        1
    } else {
        c
    }
}

/// The bit pattern of the quiet NaN that carries `id`.
///
/// # Panics
/// If `id` is 0 or larger than [`MAX_ID`]: ids are assigned by this crate, so that is a bug.
pub fn encode_bits(id: u32) -> u64 {
    assert!(
        id != 0 && id <= MAX_ID,
        "NaN tag id {id} out of range 1..={MAX_ID}"
    );
    EXP_MASK_64 | QUIET_64 | (u64::from(id) << ID_SHIFT_64) | check(id)
}

/// [`encode`] for an id the caller knows to be in range (no check: a loop over many ids
/// vectorizes).
#[inline]
pub(crate) fn encode_in_range(id: u32) -> f64 {
    debug_assert!(id != 0 && id <= MAX_ID);
    f64::from_bits(EXP_MASK_64 | QUIET_64 | (u64::from(id) << ID_SHIFT_64) | check(id))
}

/// The quiet NaN that carries `id` (see [`encode_bits`]).
pub fn encode(id: u32) -> f64 {
    f64::from_bits(encode_bits(id))
}

/// A quiet NaN that carries no id: it decodes to [`Decoded::Unknown`]. Used for inputs of a probe
/// beyond the [`MAX_ID`] tags one probe can carry.
pub fn untagged() -> f64 {
    // Payload nonzero (so it is not mistaken for a default NaN by a reader who looks at it), id 0.
    f64::from_bits(EXP_MASK_64 | QUIET_64 | 0x5A5)
}

/// Decodes a binary64 value (see the module docs for the rules).
pub fn decode_bits(bits: u64) -> Decoded {
    if bits & EXP_MASK_64 != EXP_MASK_64 || bits & FRAC_MASK_64 == 0 {
        return Decoded::NotNan;
    }
    let payload = bits & PAYLOAD_MASK_64;
    let id = (payload >> ID_SHIFT_64) as u32;
    let low = payload & CHECK_MASK_64;
    if id == 0 {
        Decoded::Unknown
    } else if low == 0 {
        Decoded::ViaFloat(id)
    } else if low == check(id) {
        Decoded::Tagged(id)
    } else {
        Decoded::Unknown
    }
}

/// Decodes a binary64 value (see [`decode_bits`]).
pub fn decode(y: f64) -> Decoded {
    decode_bits(y.to_bits())
}

/// The single-precision quiet NaN that carries `id` in its 22 payload bits.
///
/// # Panics
/// If `id` is 0 or larger than [`MAX_ID`].
pub fn encode_f32(id: u32) -> f32 {
    assert!(
        id != 0 && id <= MAX_ID,
        "NaN tag id {id} out of range 1..={MAX_ID}"
    );
    f32::from_bits(EXP_MASK_32 | QUIET_32 | id)
}

/// Decodes a binary32 value: a NaN with a nonzero payload gives `Tagged(payload)` (there is no
/// room for a check in single precision); payload 0 gives `Unknown`.
pub fn decode_f32(y: f32) -> Decoded {
    let bits = y.to_bits();
    if bits & EXP_MASK_32 != EXP_MASK_32 || bits & FRAC_MASK_32 == 0 {
        return Decoded::NotNan;
    }
    match bits & PAYLOAD_MASK_32 {
        0 => Decoded::Unknown,
        id => Decoded::Tagged(id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run-time `double -> float` conversion, as compiled code does it. `black_box` keeps
    /// rustc from constant-folding the cast, which may canonicalise the NaN (Rust leaves NaN
    /// payloads of casts unspecified; x86 `cvtsd2ss` keeps bits 50..29).
    fn narrow(v: f64) -> f32 {
        std::hint::black_box(v) as f32
    }

    fn sample_ids() -> impl Iterator<Item = u32> {
        (1..5000)
            .chain((MAX_ID - 5000)..=MAX_ID)
            .chain((0..22).map(|k| 1 << k))
    }

    #[test]
    fn round_trip_every_sampled_id() {
        for id in sample_ids() {
            let v = encode(id);
            assert!(v.is_nan());
            assert_eq!(decode(v), Decoded::Tagged(id), "id {id}");
        }
    }

    #[test]
    fn emits_quiet_nans_only() {
        for id in sample_ids() {
            assert_ne!(encode_bits(id) & QUIET_64, 0);
            assert_ne!(encode_f32(id).to_bits() & QUIET_32, 0);
        }
        assert_ne!(untagged().to_bits() & QUIET_64, 0);
    }

    #[test]
    fn check_bits_never_zero() {
        for id in 1..=MAX_ID {
            assert_ne!(check(id), 0);
        }
    }

    #[test]
    fn survives_sign_changes() {
        for id in sample_ids() {
            let v = encode(id);
            assert_eq!(decode(-v), Decoded::Tagged(id));
            assert_eq!(decode(v.abs()), Decoded::Tagged(id));
            assert_eq!(decode((-v).abs()), Decoded::Tagged(id));
            assert_eq!(decode(v.copysign(-1.0)), Decoded::Tagged(id));
        }
    }

    #[test]
    fn survives_arithmetic_with_numbers() {
        let v = encode(12345);
        let x = std::hint::black_box(3.5f64);
        for y in [
            v + x,
            x + v,
            v * x,
            0.0 * v,
            v - x,
            v / x,
            v.sin(),
            v.exp(),
            v.sqrt(),
        ] {
            assert_eq!(decode(y), Decoded::Tagged(12345));
        }
    }

    #[test]
    fn float_round_trip_keeps_the_id() {
        for id in sample_ids() {
            let narrowed = narrow(encode(id));
            assert_eq!(decode_f32(narrowed), Decoded::Tagged(id), "id {id}");
            assert_eq!(
                decode(f64::from(narrowed)),
                Decoded::ViaFloat(id),
                "id {id}"
            );
        }
    }

    #[test]
    fn measured_float_trip_example() {
        // NAN_FACTS §2: 7FF9234567890ABC -> 7FC91A2B -> 7FF9234560000000.
        let narrowed = narrow(f64::from_bits(0x7FF9_2345_6789_0ABC));
        assert_eq!(narrowed.to_bits(), 0x7FC9_1A2B);
        assert_eq!(f64::from(narrowed).to_bits(), 0x7FF9_2345_6000_0000);
        assert_eq!(decode(f64::from(narrowed)), Decoded::ViaFloat(0x091A2B));
    }

    #[test]
    fn f32_encoding_widens_to_via_float() {
        for id in sample_ids() {
            assert_eq!(decode_f32(encode_f32(id)), Decoded::Tagged(id));
            assert_eq!(decode(f64::from(encode_f32(id))), Decoded::ViaFloat(id));
        }
    }

    #[test]
    fn default_nans_are_unknown() {
        for bits in [0xFFF8_0000_0000_0000u64, 0x7FF8_0000_0000_0000] {
            assert_eq!(decode_bits(bits), Decoded::Unknown);
        }
        let zero = std::hint::black_box(0.0f64);
        assert_eq!(decode(zero / zero), Decoded::Unknown);
        assert_eq!(decode(f64::NAN), Decoded::Unknown);
        assert_eq!(decode_f32(f32::NAN), Decoded::Unknown);
        assert_eq!(decode(untagged()), Decoded::Unknown);
    }

    #[test]
    fn wrong_check_is_unknown() {
        let bits = encode_bits(777) ^ 1;
        assert_eq!(decode_bits(bits), Decoded::Unknown);
    }

    #[test]
    fn quiet_bit_ignored_when_decoding() {
        // A signalling NaN with our payload (as a black box might hand back) still decodes.
        let bits = encode_bits(4242) & !QUIET_64;
        assert_eq!(decode_bits(bits), Decoded::Tagged(4242));
    }

    #[test]
    fn numbers_and_infinities_are_not_nan() {
        for v in [
            0.0,
            -0.0,
            1.0,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(decode(v), Decoded::NotNan);
        }
        assert_eq!(decode_f32(f32::INFINITY), Decoded::NotNan);
    }

    #[test]
    #[should_panic]
    fn id_zero_is_refused() {
        encode(0);
    }

    #[test]
    #[should_panic]
    fn id_too_large_is_refused() {
        encode(MAX_ID + 1);
    }
}
