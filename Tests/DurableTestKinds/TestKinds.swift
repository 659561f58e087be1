// Kinds of work the durable tests run, in process and in worker processes.
#if Durable

import Foundation
import OperationsDurable

/// Returns its input.
public struct Echo: DurableOperation {
    public static let kind = "echo"
    public init() {}
    public func run(_ input: Int, context: DurableContext) async throws -> Int { input }
}

/// Its value plus the sum of its parents' outputs (read through the context).
public struct Node: DurableOperation {
    public static let kind = "node"
    public struct Input: Codable, Sendable {
        public var value: Int
        public var parents: [DurableHandle<Node>]
        public init(value: Int, parents: [DurableHandle<Node>] = []) {
            self.value = value
            self.parents = parents
        }
    }
    public init() {}
    public func run(_ input: Input, context: DurableContext) async throws -> Int {
        var sum = input.value
        for parent in input.parents { sum += try await context.output(of: parent) }
        return sum
    }
}

/// Takes the given time, as work would, and returns its attempt number.
public struct Work: DurableOperation {
    public static let kind = "work"
    public init() {}
    public func run(_ milliseconds: Int, context: DurableContext) async throws -> Int {
        if milliseconds > 0 { try await Task.sleep(for: .milliseconds(milliseconds)) }
        return context.attempt
    }
}

/// Runs until cancelled on attempts before `releasedOnAttempt`; returns the attempt from then on.
public struct Hold: DurableOperation {
    public static let kind = "hold"
    public init() {}
    public func run(_ releasedOnAttempt: Int, context: DurableContext) async throws -> Int {
        while context.attempt < releasedOnAttempt {
            try context.checkCancellation()
            try await Task.sleep(for: .seconds(3600))
        }
        return context.attempt
    }
}

/// Throws on attempts before `succeedsOnAttempt`.
public struct Flaky: DurableOperation {
    public static let kind = "flaky"
    public struct Failure: Error, CustomStringConvertible {
        public let attempt: Int
        public var description: String { "flaky attempt \(attempt) failed" }
    }
    public init() {}
    public func run(_ succeedsOnAttempt: Int, context: DurableContext) async throws -> Int {
        if context.attempt < succeedsOnAttempt { throw Failure(attempt: context.attempt) }
        return context.attempt
    }
}

/// Its input plus the outputs of the echoes it depends on, read through the context.
public struct SumOfEchoes: DurableOperation {
    public static let kind = "sum-of-echoes"
    public init() {}
    public func run(_ input: Int, context: DurableContext) async throws -> [Int] {
        let echoes = try await context.outputs(of: Echo.self)
        return [input + echoes.reduce(0, +)] + echoes
    }
}

/// Every kind above, for a worker.
public let allTestKinds: [any DurableOperation] = [Echo(), Node(), Work(), Hold(), Flaky(), SumOfEchoes()]
#endif
