import Operations

/// A value shared between the threads and tasks of a test.
/// - Note: `@unchecked Sendable`: every access goes through `lock`.
public final class Shared<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var _value: Value

    public init(_ value: Value) { _value = value }

    /// The value now (as `callAsFunction()`).
    public var value: Value { lock.withLock { _value } }

    /// The value now.
    public func callAsFunction() -> Value { value }

    public func set(_ value: Value) { lock.withLock { _value = value } }

    @discardableResult
    public func update<R>(_ body: (inout Value) -> R) -> R { lock.withLock { body(&_value) } }
}

extension Shared where Value == [String] {
    public func append(_ element: String) { update { $0.append(element) } }
}

extension Shared where Value == Int {
    @discardableResult
    public func increment() -> Int { update { $0 += 1; return $0 } }
}

/// Takes a one-shot flag: true the first time only.
public func takeOnce(_ flag: Shared<Bool>) -> Bool {
    flag.update { flag in
        defer { flag = false }
        return flag
    }
}

/// A count that tasks can await reaching a value.
public final class AsyncCounter: Sendable {
    private let state = Shared<(count: Int, waiters: [(Int, CheckedContinuation<Void, Never>)])>((0, []))

    public init() {}

    public var value: Int { state().count }

    @discardableResult
    public func increment() -> Int {
        let (count, ready) = state.update { state -> (Int, [CheckedContinuation<Void, Never>]) in
            state.count += 1
            let ready = state.waiters.filter { $0.0 <= state.count }.map(\.1)
            state.waiters.removeAll { $0.0 <= state.count }
            return (state.count, ready)
        }
        for waiter in ready { waiter.resume() }
        return count
    }

    /// Suspends until the count is at least `target`.
    public func wait(for target: Int) async {
        await withCheckedContinuation { continuation in
            let reached = state.update { state in
                if state.count < target { state.waiters.append((target, continuation)) }
                return state.count >= target
            }
            if reached { continuation.resume() }
        }
    }
}

/// A weak reference that can be filled in later and read from any thread.
/// - Note: `@unchecked Sendable`: every access goes through `lock`.
public final class WeakOperationBox: @unchecked Sendable {
    private let lock = NSLock()
    private weak var _operation: Operation?

    public init() {}

    public var operation: Operation? {
        get { lock.withLock { _operation } }
        set { lock.withLock { _operation = newValue } }
    }
}
