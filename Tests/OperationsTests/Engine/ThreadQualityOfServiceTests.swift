import Operations
import OperationsComposition
import Testing

/// An operation's quality of service reaches the thread that runs it.
@Suite("Quality of service reaches the thread")
struct ThreadQualityOfServiceTests {
    /// Runs `operation` on `queue` and returns the thread's quality of service inside it.
    static func threadQuality(on queue: OperationQueue, operationQuality: QualityOfService?) -> QualityOfService? {
        let seen = Shared<QualityOfService?>(nil)
        let operation = BlockOperation { seen.update { $0 = Thread.current.qualityOfService } }
        if let operationQuality { operation.qualityOfService = operationQuality }
        queue.addOperation(operation)
        operation.waitUntilFinished()
        return seen()
    }

    @Test("its own quality of service when set, never below its queue's; the queue's when not set")
    func ownOrQueue() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.qualityOfService = .utility
        #expect(Self.threadQuality(on: queue, operationQuality: .userInitiated) == .userInitiated)
        #expect(Self.threadQuality(on: queue, operationQuality: .background) == .utility, "below the queue's: the queue's")
        #expect(Self.threadQuality(on: queue, operationQuality: nil) == .utility)
    }

    #if os(Linux)
    /// The nice value of the thread that runs an operation of `queue` (per thread on Linux).
    static func niceValue(on queue: OperationQueue) -> Int32 {
        let seen = Shared<Int32>(0)
        queue.addOperation(BlockOperation { seen.update { $0 = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) } })
        queue.waitUntilAllOperationsAreFinished()
        return seen()
    }

    @Test("a queue nobody gave a quality of service runs its operations at the default thread priority, though its getter reads .background")
    func unsetQueueRunsAtDefaultPriority() {
        let baseline = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        let unset = OperationQueue()
        #expect(unset.qualityOfService == .background)
        #expect(Self.niceValue(on: unset) == baseline)
        #expect(Self.threadQuality(on: unset, operationQuality: nil) == .default)
        let background = OperationQueue()
        background.qualityOfService = .background
        #expect(Self.niceValue(on: background) > baseline, "a quality of service the user set still lowers the thread")
    }
    #endif

    @Test("a later change of the queue's quality of service reaches later operations")
    func queueChange() {
        let queue = OperationQueue()
        queue.qualityOfService = .utility
        #expect(Self.threadQuality(on: queue, operationQuality: nil) == .utility)
        queue.qualityOfService = .userInteractive
        #expect(Self.threadQuality(on: queue, operationQuality: nil) == .userInteractive)
    }

    /// Runs, on a `.utility` queue, a group, a retry and an operation guarded by a condition
    /// (each at `ownQuality` when given), and returns the thread's quality of service inside
    /// the work each runs on its behalf: the group's child, the retry's attempt, the
    /// condition's contributed operation.
    static func qualityOfWorkOnBehalf(ownQuality: QualityOfService?) -> [String: QualityOfService] {
        let seen = Shared<[String: QualityOfService]>([:])
        @Sendable func recording(_ work: String) -> BlockOperation {
            BlockOperation { seen.update { $0[work] = Thread.current.qualityOfService } }
        }
        let group = GroupOperation(operations: [recording("group child")])
        let retry = RetryOperation<Void>(maximumAttempts: 1, clock: ContinuousClock()) { _ in recording("retry attempt") }
        let guarded = BlockOperation {}
        guarded.addCondition(BlockCondition(dependency: { _ in recording("contributed") }) { _ in true })
        let operations: [Operation] = [group, retry, guarded]
        if let ownQuality { for operation in operations { operation.qualityOfService = ownQuality } }
        let queue = OperationQueue()
        queue.qualityOfService = .utility
        queue.addOperations(operations, waitUntilFinished: true)
        return seen()
    }

    @Test(
        "work an operation runs on its behalf (a group's child, a retry's attempt, a condition's contributed operation) runs at the quality of service the operation runs at",
        arguments: [
            (own: nil, runsAt: .utility), (own: .userInitiated, runsAt: .userInitiated), (own: .background, runsAt: .utility),
        ] as [(own: QualityOfService?, runsAt: QualityOfService)])
    func workOnBehalf(own: QualityOfService?, runsAt: QualityOfService) {
        let seen = Self.qualityOfWorkOnBehalf(ownQuality: own)
        for work in ["group child", "retry attempt", "contributed"] {
            #expect(seen[work] == runsAt, "\(work) on a .utility queue, its operation's own quality of service \(own.map { "\($0)" } ?? "not set")")
        }
    }
}
