/// Decides which of a wait's looks run the stall analysis.
///
/// The analysis reads every operation waited for and everything it waits for: for a wait
/// on a queue of many thousands, a look costs as much as running a good share of them. A
/// wait that makes progress is not stalled, so a look runs the analysis only when the
/// queue of what it waits for finished nothing since the previous look (or since the wait
/// began). A queue that keeps finishing other operations delays the report of one that
/// cannot make progress until it goes quiet: by one look, at most a minute later.
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

    /// A look is due and the queue's mark is now `mark`: whether to run the analysis. Always
    /// with no queue to watch (nil), and when the mark has not moved since the last look.
    mutating func analyses(at mark: UInt64?) -> Bool {
        defer { lastMark = mark }
        guard let mark, let lastMark else { return true }
        return mark == lastMark
    }
}
