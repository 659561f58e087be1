// A framework built on Operations that declares, as PSOperations and ProcedureKit do, its own
// composition types under the names they use. Declarations only: the client test checks that
// importing this framework beside `Operations` leaves every name unambiguous.

import Operations

public protocol OperationCondition: Sendable {
    static var name: String { get }
    func dependency(for operation: Operation) -> Operation?
}

public protocol OperationObserver: Sendable {
    func operationDidStart(_ operation: Operation)
}

public struct BlockObserver: OperationObserver {
    public init() {}
    public func operationDidStart(_ operation: Operation) {}
}

public struct TimeoutObserver: OperationObserver {
    public let timeout: Double
    public init(timeout: Double) { self.timeout = timeout }
    public func operationDidStart(_ operation: Operation) {}
}

public struct BlockCondition: OperationCondition {
    public static let name = "Block"
    public init() {}
    public func dependency(for operation: Operation) -> Operation? { nil }
}

public struct NegatedCondition<Base: OperationCondition>: OperationCondition {
    public static var name: String { "Not<\(Base.name)>" }
    public let base: Base
    public init(condition: Base) { base = condition }
    public func dependency(for operation: Operation) -> Operation? { nil }
}

public struct SilentCondition<Base: OperationCondition>: OperationCondition {
    public static var name: String { "Silent<\(Base.name)>" }
    public let base: Base
    public init(condition: Base) { base = condition }
    public func dependency(for operation: Operation) -> Operation? { nil }
}

public struct NoFailedDependenciesCondition: OperationCondition {
    public static let name = "NoFailedDependencies"
    public init() {}
    public func dependency(for operation: Operation) -> Operation? { nil }
}

/// - Note: `@unchecked Sendable` (as its superclass): no state of its own.
open class GroupOperation: Operation, @unchecked Sendable {
    public override init() { super.init() }
}

/// - Note: `@unchecked Sendable` (as its superclass): `delay` never changes after `init`.
open class DelayOperation: Operation, @unchecked Sendable {
    public let delay: Double
    public init(delay: Double) {
        self.delay = delay
        super.init()
    }
}

/// - Note: `@unchecked Sendable` (as its superclass): `attempts` never changes after `init`.
open class RetryOperation: Operation, @unchecked Sendable {
    public let attempts: Int
    public init(attempts: Int) {
        self.attempts = attempts
        super.init()
    }
}
