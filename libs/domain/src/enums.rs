//! The two things every enum of this crate with a name or a wire form has,
//! each written once: its stored name ([`named_enum!`]: `as_str`,
//! `from_name`, `Display`) and its wire enum (`wire_enum!`: `From` into it,
//! `TryFrom<i32>` out of it). Each enum's table of variants stays beside
//! the enum.

/// A `Copy` enum's names: `as_str` (the name it is stored and shown by),
/// `from_name` (its inverse) and `Display` (the name), from the table of its
/// variants and their names.
#[macro_export]
macro_rules! named_enum {
    ($enum:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $enum {
            /// The name it is stored and shown by.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)+
                }
            }

            /// The value named `name` (see [`as_str`](Self::as_str)).
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($name => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }

        impl ::std::fmt::Display for $enum {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// A domain enum's conversions with its wire enum `pb::$wire`, whose
/// variants are named alike: `From` into the wire enum, and `TryFrom<i32>`
/// that takes each listed wire value (with the ones after `|`, which mean
/// the same) and refuses any other as [`InvalidInput`](crate::InvalidInput)
/// saying `$refusal`. Given each variant's name too (`Variant => "name"`),
/// also its [`named_enum!`] names.
macro_rules! wire_enum {
    ($enum:ident <=> pb::$wire:ident {
        $($variant:ident => $name:literal),+ $(,)?
    } else $refusal:literal) => {
        $crate::named_enum!($enum { $($variant => $name),+ });
        $crate::enums::wire_enum!($enum <=> pb::$wire { $($variant),+ } else $refusal);
    };
    ($enum:ident <=> pb::$wire:ident {
        $($variant:ident $(| $alias:ident)*),+ $(,)?
    } else $refusal:literal) => {
        impl TryFrom<i32> for $enum {
            type Error = $crate::InvalidInput;

            fn try_from(value: i32) -> Result<Self, Self::Error> {
                match pb::$wire::try_from(value) {
                    $(Ok(pb::$wire::$variant $(| pb::$wire::$alias)*) => Ok(Self::$variant),)+
                    _ => Err($crate::InvalidInput::new($refusal)),
                }
            }
        }

        impl From<$enum> for pb::$wire {
            fn from(value: $enum) -> Self {
                match value {
                    $($enum::$variant => Self::$variant,)+
                }
            }
        }
    };
}
pub(crate) use wire_enum;

#[cfg(test)]
mod tests {
    // The macro writes public methods, as the crate's enums need.
    #![allow(unreachable_pub)]

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Side {
        Left,
        Right,
    }

    crate::named_enum!(Side {
        Left => "left",
        Right => "right",
    });

    #[test]
    fn names_round_trip() {
        for side in [Side::Left, Side::Right] {
            assert_eq!(Side::from_name(side.as_str()), Some(side));
            assert_eq!(side.to_string(), side.as_str());
        }
        assert_eq!(Side::from_name("Left"), None);
        assert_eq!(Side::from_name(""), None);
    }
}
