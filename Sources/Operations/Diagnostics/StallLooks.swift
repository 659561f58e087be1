/// Decides which of a wait's looks run the stall analysis.
///
/// The analysis reads every operation waited for and everything it waits for: for a wait
/// on a queue of many thousands, one look costs as much as running a good share of them.
/// A wait for a queue's operations (all of them, a batch, room in it) that sees the queue
/// finish something between two looks is making progress, so such a look skips the
/// analysis, except after the longest interval: a queue that keeps finishing other
/// operations delays the report of one that cannot make progress to the first look after
/// a full minute's interval (about two minutes into the wait with the default delay), and
/// the analysis runs at most once a minute. A wait for one operation (no queue to watch)
/// analyses at every look: the operation's own dependencies are what it waits for, and
/// other work finishing in its queue says nothing of them.
///
/// A pure value: the caller reads the queue's mark (`StallReport.Call.progressMark`) and
/// passes it in.
struct StallLooks {
    /// The mark at the previous look, or when the wait began; nil: no queue to watch.
    private var lastMark: UInt64?

    /// A wait that began when its queue's mark was `mark`.
    init(beganAt mark: UInt64?) {
        lastMark = mark
    }

    /// A look is due, after an interval that was the longest (`afterLongestInterval`) or
    /// not, and the queue's mark is now `mark`: whether to run the analysis. Always with no
    /// queue to watch (nil) and after the longest interval; otherwise when the mark has not
    /// moved since the last look.
    mutating func analyses(at mark: UInt64?, afterLongestInterval: Bool) -> Bool {
        defer { lastMark = mark }
        guard let mark, let lastMark, !afterLongestInterval else { return true }
        return mark == lastMark
    }
}
