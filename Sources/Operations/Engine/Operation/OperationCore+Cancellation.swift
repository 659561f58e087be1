// Cancellation: requested in any phase before the finish, never after.

// MARK: - Cancellation

extension OperationCore {
    /// Whether the operation was cancelled (the reason, if any, is in `extras`).
    enum Cancellation: UInt8 {
        case none
        /// `cancel()` claimed the cancellation and is announcing it; `isCancelled` still
        /// reads false. A finish that comes first completes it (the cancel came first).
        case requested
        case cancelled

        var isCancelled: Bool { self == .cancelled }
    }

    /// `cancel()` wants to cancel (with the reason `cancel(with:)` offered, if any): true
    /// when this call is the one that does (nothing finished and no other cancel came
    /// first). One lock section decides.
    mutating func requestCancellation() -> Bool {
        guard cancellation == .none, !phase.isFinishingOrFinished else { return false }
        if let extras, let reason = extras.offeredCancellationReason {
            extras.cancellationReason = reason
            extras.offeredCancellationReason = nil
        }
        cancellation = .requested
        return true
    }

    /// Makes a requested cancellation take effect; false when a finish already did.
    mutating func completeCancellation() -> Bool {
        guard cancellation == .requested else { return false }
        cancellation = .cancelled
        readinessGeneration &+= 1
        return true
    }
}
