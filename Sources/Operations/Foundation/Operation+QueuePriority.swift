// The bands in which a queue starts its ready operations.

extension Operation {
    /// The relative order in which a queue starts ready operations.
    public enum QueuePriority: Int, Sendable {
        /// Started after every other ready operation of its queue.
        case veryLow = -8
        /// Started after `.normal`, `.high` and `.veryHigh` operations.
        case low = -4
        /// The default.
        case normal = 0
        /// Started before `.normal`, `.low` and `.veryLow` operations.
        case high = 4
        /// Started before every other ready operation of its queue.
        case veryHigh = 8
    }
}
