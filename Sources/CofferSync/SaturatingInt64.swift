// Whole seconds or milliseconds since 1970 as an Int64, for any Date a caller can make.

extension Int64 {
    /// `value` rounded by `rule`, held at `Int64.min` and `Int64.max` when it is beyond them:
    /// `Int64(_: Double)` traps there and stops the process, and a `Date` about 292 million years
    /// away (in milliseconds) or 292 billion years (in seconds) is one a caller can pass. NaN (a
    /// `Date` made from NaN seconds) gives 0.
    package init(saturating value: Double, rounding rule: FloatingPointRoundingRule) {
        let rounded = value.rounded(rule)
        if rounded.isNaN {
            self = 0
        } else if rounded >= 0x1p63 {
            self = .max
        } else if rounded < -0x1p63 {
            self = .min
        } else {
            self = Int64(rounded)
        }
    }
}
