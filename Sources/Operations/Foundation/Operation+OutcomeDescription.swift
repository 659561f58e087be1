// How an outcome reads in logs and messages.

extension Operation.Outcome: CustomStringConvertible {
    /// `succeeded`, `failed: <error>`, `cancelled`, or `cancelled: <reason>`.
    public var description: String {
        switch self {
        case .succeeded: "succeeded"
        case .failed(let error): "failed: \(error)"
        case .cancelled(nil): "cancelled"
        case .cancelled(let reason?): "cancelled: \(reason)"
        }
    }
}
