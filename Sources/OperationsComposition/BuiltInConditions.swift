// The conditions that come with the library.

import Operations

/// Fails when one of the operation's dependencies failed (`Operation.Outcome.failed(_:)`).
///
/// Foundation runs dependents after a failed dependency; this condition opts out.
public struct NoFailedDependenciesCondition: OperationCondition, ImmediateCondition {
    /// Creates the condition.
    public init() {}

    public func evaluate(for operation: Operation) async throws { try check(operation) }

    func decideWithoutSuspending(for operation: Operation) -> Result<Void, any Error>? {
        Result { try check(operation) }
    }

    private func check(_ operation: Operation) throws {
        for dependency in operation.dependencies {
            if case .failed(let error)? = dependency.outcome {
                throw ConditionFailedError(
                    condition: name, operation: operation._misuseName,
                    reason: "dependency \(dependency._shortName) failed: \(error)")
            }
        }
    }
}

/// Fails when one of the operation's dependencies was cancelled.
public struct NoCancelledDependenciesCondition: OperationCondition, ImmediateCondition {
    /// Creates the condition.
    public init() {}

    public func evaluate(for operation: Operation) async throws { try check(operation) }

    func decideWithoutSuspending(for operation: Operation) -> Result<Void, any Error>? {
        Result { try check(operation) }
    }

    private func check(_ operation: Operation) throws {
        for dependency in operation.dependencies where dependency.outcome?.isCancelled == true {
            throw ConditionFailedError(
                condition: name, operation: operation._misuseName,
                reason: "dependency \(dependency._shortName) was cancelled")
        }
    }
}

/// A condition given by a predicate, which may suspend: false (or a thrown error) fails.
///
/// A predicate that does not suspend (a closure without `await`) is asked on the thread
/// where the operation's dependencies finished, with no task: such a condition costs about
/// as much as the operation itself.
public struct BlockCondition: OperationCondition, ImmediateCondition {
    private enum Predicate {
        case immediate(@Sendable (Operation) throws -> Bool)
        case suspending(@Sendable (Operation) async throws -> Bool)
    }

    public let name: String
    private let predicate: Predicate
    private let contributed: (@Sendable (Operation) -> Operation?)?

    /// Creates a condition that holds when `predicate` returns true. `dependency`, if
    /// given, makes the operation to run before the predicate is asked.
    public init(
        name: String = "BlockCondition",
        dependency: (@Sendable (Operation) -> Operation?)? = nil,
        _ predicate: @escaping @Sendable (Operation) async throws -> Bool
    ) {
        self.name = name
        self.predicate = .suspending(predicate)
        contributed = dependency
    }

    /// Creates a condition that holds when `predicate`, which does not suspend, returns true.
    public init(
        name: String = "BlockCondition",
        dependency: (@Sendable (Operation) -> Operation?)? = nil,
        _ predicate: @escaping @Sendable (Operation) throws -> Bool
    ) {
        self.name = name
        self.predicate = .immediate(predicate)
        contributed = dependency
    }

    public func dependency(for operation: Operation) -> Operation? { contributed?(operation) }

    public func evaluate(for operation: Operation) async throws {
        let holds: Bool
        switch predicate {
        case .immediate(let predicate): holds = try predicate(operation)
        case .suspending(let predicate): holds = try await predicate(operation)
        }
        guard holds else { throw failure(operation) }
    }

    func decideWithoutSuspending(for operation: Operation) -> Result<Void, any Error>? {
        guard case .immediate(let predicate) = predicate else { return nil }
        return Result {
            guard try predicate(operation) else { throw failure(operation) }
        }
    }

    private func failure(_ operation: Operation) -> ConditionFailedError {
        ConditionFailedError(condition: name, operation: operation._misuseName, reason: "the predicate returned false")
    }
}

/// Holds when its base condition fails, and fails when it holds. The base's dependency
/// still runs first.
public struct NegatedCondition<Base: OperationCondition>: OperationCondition {
    /// The condition negated.
    public let base: Base

    /// Negates `base`.
    public init(_ base: Base) { self.base = base }

    public var name: String { "not \(base.name)" }

    public func dependency(for operation: Operation) -> Operation? { base.dependency(for: operation) }

    public func evaluate(for operation: Operation) async throws {
        do {
            try await base.evaluate(for: operation)
        } catch {
            return
        }
        throw ConditionFailedError(condition: name, operation: operation._misuseName, reason: "\(base.name) holds")
    }
}

/// Its base condition without the base's dependency: evaluated as is, nothing runs first
/// (say, "only if already signed in", without offering to sign in).
public struct SilentCondition<Base: OperationCondition>: OperationCondition {
    /// The condition made silent.
    public let base: Base

    /// Makes `base` silent.
    public init(_ base: Base) { self.base = base }

    public var name: String { "silent \(base.name)" }

    public func dependency(for operation: Operation) -> Operation? { nil }

    public func evaluate(for operation: Operation) async throws {
        try await base.evaluate(for: operation)
    }
}

extension OperationCondition where Self == NoFailedDependenciesCondition {
    /// Fails when a dependency failed.
    public static var noFailedDependencies: Self { NoFailedDependenciesCondition() }
}

extension OperationCondition where Self == NoCancelledDependenciesCondition {
    /// Fails when a dependency was cancelled.
    public static var noCancelledDependencies: Self { NoCancelledDependenciesCondition() }
}

extension OperationCondition {
    /// This condition negated (see ``NegatedCondition``).
    public func negated() -> NegatedCondition<Self> { NegatedCondition(self) }

    /// This condition without its dependency (see ``SilentCondition``).
    public func silent() -> SilentCondition<Self> { SilentCondition(self) }
}
