// Typed data along dependencies: `then` and `combine`.

extension ValueOperation {
    /// A new operation that depends on this one and transforms its value on the calling
    /// thread of its queue: the synchronous form (CPU work).
    ///
    /// The new operation is in no queue yet: add it to the queue that suits it. If this
    /// operation fails or is cancelled, the new one is cancelled without running, with
    /// this one's error as the reason.
    public func then<Next: Sendable>(
        _ transform: @escaping @Sendable (Success) throws -> Next
    ) -> ValueBlockOperation<Next> {
        ValueBlockOperation(inputs: [self]) { [self] in try transform(_inputValue()) }
    }

    /// A new operation that depends on this one and transforms its value in an `async`
    /// body (I/O): an ``AsyncBlockOperation``, bounded by its queue like any other.
    ///
    /// The new operation is in no queue yet: add it to the queue that suits it. If this
    /// operation fails or is cancelled, the new one is cancelled without running, with
    /// this one's error as the reason.
    public func then<Next: Sendable>(
        _ transform: @escaping @Sendable @isolated(any) (Success) async throws -> Next
    ) -> AsyncBlockOperation<Next> {
        AsyncBlockOperation(inputs: [self]) { [self] in try await transform(_inputValue()) }
    }
}

/// A new operation that depends on every input and combines their values, of any number
/// and of different types, in a synchronous closure.
///
/// ```swift
/// let report = combine(user, orders, settings) { user, orders, settings in
///     Report(user: user, orders: orders, settings: settings)
/// }
/// queue.addOperation(report)
/// ```
///
/// The new operation is in no queue yet. If an input fails or is cancelled, it is
/// cancelled without running, with the first such input's error as the reason.
public func combine<each Input: Sendable, Output: Sendable>(
    _ inputs: repeat ValueOperation<each Input>,
    transform: @escaping @Sendable (repeat each Input) throws -> Output
) -> ValueBlockOperation<Output> {
    var list: [Operation] = []
    repeat list.append(each inputs)
    return ValueBlockOperation(inputs: list) {
        try transform(repeat try (each inputs)._inputValue())
    }
}

/// A new operation that depends on every input and combines their values, of any number
/// and of different types, in an `async` closure: an ``AsyncBlockOperation``.
///
/// The new operation is in no queue yet. If an input fails or is cancelled, it is
/// cancelled without running, with the first such input's error as the reason.
public func combine<each Input: Sendable, Output: Sendable>(
    _ inputs: repeat ValueOperation<each Input>,
    transform: @escaping @Sendable @isolated(any) (repeat each Input) async throws -> Output
) -> AsyncBlockOperation<Output> {
    var list: [Operation] = []
    repeat list.append(each inputs)
    return AsyncBlockOperation(inputs: list) {
        try await transform(repeat try (each inputs)._inputValue())
    }
}
