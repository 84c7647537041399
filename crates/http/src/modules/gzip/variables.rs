//! `$gzip_ratio`: the original size over the compressed one as `N.NN`; not found until a
//! compressed body has ended.

use crate::kernel::variables::evaluate::VariableDef;

pub const VARIABLES: &[VariableDef] = &[VariableDef {
    name: "gzip_ratio",
    prefix: false,
    get: |variables, _, out| match variables.request.gzip_ratio {
        Some((taken, given)) if taken > 0 && given > 0 => {
            out.extend_from_slice(ratio(taken, given).as_bytes());
            true
        }
        _ => false,
    },
}];

/// The ratio as nginx writes it: two decimals, the third rounding the second half up.
pub(crate) fn ratio(taken: u64, given: u64) -> String {
    let (taken, given) = (u128::from(taken), u128::from(given));
    let mut whole = taken / given;
    let mut hundredths = (taken * 100 / given) % 100;
    if (taken * 1000 / given) % 10 > 4 {
        hundredths += 1;
        if hundredths > 99 {
            whole += 1;
            hundredths = 0;
        }
    }
    format!("{whole}.{hundredths:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_ratio_rounds_as_nginx() {
        assert_eq!(ratio(2125, 1000), "2.13");
        assert_eq!(ratio(2124, 1000), "2.12");
        assert_eq!(ratio(1999, 1000), "2.00");
        assert_eq!(ratio(100, 300), "0.33");
    }
}
