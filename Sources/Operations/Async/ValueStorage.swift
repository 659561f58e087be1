/// What a typed operation keeps besides the engine's state: its work until it runs, the
/// task running it, and its value. Guarded by the operation's `Locked<ValueStorage>`.
///
/// Not generic on purpose: the typed operations are generic classes, and code that is not
/// specialized for their `Success` type would look up the metadata of every generic type
/// built from it (`Locked<Result<Success, …>?>`, a closure returning `Success`) at each
/// use — a tenth of the time of a short async operation. Values are kept as `any Sendable`
/// and cast back once, when read.
struct ValueStorage {
    /// The work, until it runs or the operation finishes without running it.
    enum Work {
        case none
        case synchronous(@Sendable () throws -> any Sendable)
        case asynchronous(@Sendable () async throws -> any Sendable)
    }

    var work: Work = .none
    /// The operations whose values the work takes (`then`, `combine`), until it finishes.
    var inputs: [Operation] = []
    /// The task running an `async` body, until the operation finishes.
    var task: Task<Void, Never>?
    /// The slot running the `async` body, when its queue started it (instead of `task`).
    var slot: BodySlot?
    /// The value the work returned (its failure goes to the engine as the outcome).
    var value: (any Sendable)?

}
