import Foundation

/// A value shared between the threads of a chapter, reached only under its lock.
/// - Note: `@unchecked Sendable`: every access goes through `lock`.
final class Protected<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    @discardableResult
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&value) }
    }

    var current: Value { lock.withLock { value } }
}

extension Protected {
    /// An empty list.
    convenience init<Element>() where Value == [Element] { self.init([]) }

    func append<Element>(_ element: Element) where Value == [Element] { withLock { $0.append(element) } }
}

extension Protected where Value == Int {
    convenience init() { self.init(0) }

    /// Adds one and returns the new count.
    func increment() -> Int { withLock { $0 += 1; return $0 } }
    func decrement() { withLock { $0 -= 1 } }
    func raise(to candidate: Int) { withLock { $0 = max($0, candidate) } }
}
