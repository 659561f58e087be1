/// Minimal programs for the patterns where the two implementations could disagree, and the
/// patterns of the finishing rule: run in every test, compared whole.
public enum NamedPrograms {
    public static var all: [Program] {
        [
            serialQueueStartsInTheOrderAdded,
            highBandStartsInTheOrderAdded,
            barrierHoldsBackCancelledOperationAddedAfterIt,
            bandIsFixedWhenAdded,
            superStartFinishingLaterFromAnotherThread,
            stateAnnouncedOnlyThroughDependentKey,
            finishingInsideStartBeforeItReturns,
            advisedAsynchronousFinishesWhenMainReturns,
            cancelledOperationFinishesItselfAfterSuperStart,
            waitInsideOwnCompletionBlockReturns,
            queueSubclassSeesBlocksButNotBatches,
        ]
    }

    public static func named(_ name: String) -> Program? {
        all.first { $0.identifier == "named:\(name)" }
    }

    /// What both implementations must observe, by program identifier: agreeing is not
    /// enough where the right answer is known.
    public static let expectations: [String: [String: String]] = [
        "named:serial-queue-starts-in-the-order-added": ["order": "a b c d e"],
        "named:high-band-starts-in-the-order-added": ["order": "a b c"],
        "named:barrier-holds-back-cancelled-operation-added-after-it": [
            "order": "before barrier1 after",
            "barrier1.after": "after finished=false executing=false",
            "barrier1.before": "before finished=true executing=false",
            "after.work": "0", "after.start": "1", "after.completion": "1",
        ],
        "named:band-is-fixed-when-added": ["order": "a b c d"],
        "named:super-start-finishing-later-from-another-thread": [
            "work.final": "finished=true cancelled=false executing=false",
            "dependent.dependenciesFinishedAtWork": "true",
            "work.completion": "1", "work.completionSaw": "finished=true cancelled=false",
            "queue.operationCount": "0",
        ],
        "named:state-announced-only-through-dependent-key": [
            "order": "superStarting ownStart last",
            "superStarting.completion": "1", "ownStart.completion": "1",
            "last.dependenciesFinishedAtWork": "true", "step5.returned": "true",
        ],
        "named:finishing-inside-start-before-it-returns": [
            "own.completion": "1", "dependent.dependenciesFinishedAtWork": "true", "step3.returned": "true",
        ],
        "named:advised-asynchronous-finishes-when-main-returns": [
            "advised.final": "finished=true cancelled=false executing=false",
            "advised.completion": "1", "dependent.dependenciesFinishedAtWork": "true", "step3.returned": "true",
        ],
        "named:cancelled-operation-finishes-itself-after-super-start": [
            "cancelled.start": "1", "cancelled.work": "0", "cancelled.completion": "1",
            "cancelled.completionSaw": "finished=true cancelled=true",
            "cancelled.final": "finished=true cancelled=true executing=false",
            "dependent.work": "1", "step2.returned": "true",
        ],
        "named:wait-inside-own-completion-block-returns": [
            "plain.waitInCompletionReturned": "true", "later.waitInCompletionReturned": "true",
            "block.waitInCompletionReturned": "true",
        ],
        "named:queue-subclass-sees-blocks-but-not-batches": [
            "queue.addOperationCalls": "single unnamed", "step4.operationCount": "3",
            "order": "single q2 batched barrier1",
        ],
    ]

    /// A serial suspended queue given a, b (after a), c, d (after c), e starts them in that order.
    public static var serialQueueStartsInTheOrderAdded: Program {
        let names = ["a", "b", "c", "d", "e"]
        var operations = names.map { OperationSpec(name: $0, kind: .startLogging) }
        operations[1].dependencies = [0]
        operations[3].dependencies = [2]
        return program(
            "serial-queue-starts-in-the-order-added",
            queue: QueueSpec(maxConcurrentOperationCount: 1, startsSuspended: true),
            operations: operations,
            steps: operations.indices.map { Step.add($0) } + [.setSuspended(false), .waitUntilAllOperationsAreFinished])
    }

    /// Three `.high` operations on a serial suspended queue, b after a, added as [a, b, c]: a, b, c.
    public static var highBandStartsInTheOrderAdded: Program {
        var operations = ["a", "b", "c"].map { OperationSpec(name: $0, kind: .plain, priority: .high) }
        operations[1].dependencies = [0]
        return program(
            "high-band-starts-in-the-order-added",
            queue: QueueSpec(maxConcurrentOperationCount: 1, startsSuspended: true),
            operations: operations,
            steps: [.addBatch([0, 1, 2], waitUntilFinished: false), .setSuspended(false), .waitUntilAllOperationsAreFinished])
    }

    /// before; a barrier; after, cancelled: in the barrier `after.isFinished` is false.
    public static var barrierHoldsBackCancelledOperationAddedAfterIt: Program {
        program(
            "barrier-holds-back-cancelled-operation-added-after-it",
            queue: QueueSpec(maxConcurrentOperationCount: 1, startsSuspended: true),
            operations: [
                OperationSpec(name: "before", kind: .startLogging),
                OperationSpec(name: "after", kind: .startLogging, completion: .record),
            ],
            steps: [.add(0), .addBarrier(1), .add(1), .cancel(1), .setSuspended(false), .waitUntilAllOperationsAreFinished])
    }

    /// Added to a queue that is not serial, with only a QoS set: its band comes from the QoS
    /// and stays when the queue becomes serial. a, c, d, b (`.userInitiated`, after a): a, b, c, d.
    public static var bandIsFixedWhenAdded: Program {
        var operations = ["a", "c", "d", "b"].map { OperationSpec(name: $0, kind: .plain) }
        operations[3].qualityOfService = .userInitiated
        operations[3].dependencies = [0]
        return program(
            "band-is-fixed-when-added",
            queue: QueueSpec(startsSuspended: true),
            operations: operations,
            steps: [.add(0), .add(1), .add(2), .add(3), .setMaxConcurrentOperationCount(1), .setSuspended(false),
                .waitUntilAllOperationsAreFinished])
    }

    /// `start()` calls `super.start()`; `main()` hands the work to another thread, which
    /// finishes the operation later; its dependent and completion block wait for that.
    public static var superStartFinishingLaterFromAnotherThread: Program {
        program(
            "super-start-finishing-later-from-another-thread",
            queue: QueueSpec(),
            operations: [
                OperationSpec(name: "work", kind: .superStart(finish: .later, announce: .keys), completion: .record),
                OperationSpec(name: "dependent", kind: .plain, dependencies: [0], completion: .record),
            ],
            steps: [.addBatch([0, 1], waitUntilFinished: false), .waitUntilFinished(0), .waitUntilAllOperationsAreFinished])
    }

    /// State announced only through `"state"`, on which `isExecuting`/`isFinished` depend:
    /// one calling `super.start()`, one with its own `start()`, on a serial queue.
    public static var stateAnnouncedOnlyThroughDependentKey: Program {
        program(
            "state-announced-only-through-dependent-key",
            queue: QueueSpec(maxConcurrentOperationCount: 1, startsSuspended: true),
            operations: [
                OperationSpec(name: "superStarting", kind: .superStart(finish: .beforeStartReturns, announce: .state), completion: .record),
                OperationSpec(name: "ownStart", kind: .ownStart(finish: .beforeStartReturns, announce: .state), dependencies: [0], completion: .record),
                OperationSpec(name: "last", kind: .plain, dependencies: [1]),
            ],
            steps: [.add(2), .add(1), .add(0), .setSuspended(false), .waitUntilFinished(2), .waitUntilAllOperationsAreFinished])
    }

    /// An operation with its own `start()` that finishes before `start()` returns.
    public static var finishingInsideStartBeforeItReturns: Program {
        program(
            "finishing-inside-start-before-it-returns",
            queue: QueueSpec(maxConcurrentOperationCount: 2),
            operations: [
                OperationSpec(name: "own", kind: .ownStart(finish: .beforeStartReturns, announce: .keys), completion: .record),
                OperationSpec(name: "dependent", kind: .startLogging, dependencies: [0]),
            ],
            steps: [.add(1), .add(0), .waitUntilFinished(1), .waitUntilAllOperationsAreFinished])
    }

    /// `isAsynchronous` true, no `start()` or `isFinished` override: finished when `main()` returns.
    public static var advisedAsynchronousFinishesWhenMainReturns: Program {
        program(
            "advised-asynchronous-finishes-when-main-returns",
            queue: QueueSpec(),
            operations: [
                OperationSpec(name: "advised", kind: .advisedAsynchronous, completion: .record),
                OperationSpec(name: "dependent", kind: .plain, dependencies: [0]),
            ],
            steps: [.add(0), .add(1), .waitUntilFinished(0), .waitUntilAllOperationsAreFinished])
    }

    /// Cancelled before it is added; its `start()` calls `super.start()`, then finishes itself.
    public static var cancelledOperationFinishesItselfAfterSuperStart: Program {
        program(
            "cancelled-operation-finishes-itself-after-super-start",
            queue: QueueSpec(),
            operations: [
                OperationSpec(name: "cancelled", kind: .superStart(finish: .later, announce: .keys), completion: .record),
                OperationSpec(name: "dependent", kind: .plain, dependencies: [0], completion: .record),
            ],
            steps: [.cancel(0), .addBatch([0, 1], waitUntilFinished: true), .waitUntilAllOperationsAreFinished])
    }

    /// `waitUntilFinished()` inside the operation's own completion block returns.
    public static var waitInsideOwnCompletionBlockReturns: Program {
        program(
            "wait-inside-own-completion-block-returns",
            queue: QueueSpec(),
            operations: [
                OperationSpec(name: "plain", kind: .plain, completion: .waitsForItsOperation),
                OperationSpec(name: "later", kind: .ownStart(finish: .later, announce: .keys), completion: .waitsForItsOperation),
                OperationSpec(name: "block", kind: .block(blocks: 1), completion: .waitsForItsOperation),
            ],
            steps: [.add(0), .add(1), .add(2), .waitUntilAllOperationsAreFinished])
    }

    /// A queue subclass's `addOperation(_:)` sees operations and blocks added one at a time,
    /// not batches or barriers.
    public static var queueSubclassSeesBlocksButNotBatches: Program {
        program(
            "queue-subclass-sees-blocks-but-not-batches",
            queue: QueueSpec(subclassOverridesAddOperation: true, maxConcurrentOperationCount: 1, startsSuspended: true),
            operations: [
                OperationSpec(name: "single", kind: .plain),
                OperationSpec(name: "batched", kind: .block(blocks: 2)),
                OperationSpec(name: "q2", kind: .queueBlock),
            ],
            steps: [.add(0), .addBlock(2), .addBatch([1], waitUntilFinished: false), .checkpoint, .addBarrier(1),
                .setSuspended(false), .waitUntilAllOperationsAreFinished])
    }

    private static func program(_ name: String, queue: QueueSpec, operations: [OperationSpec], steps: [Step]) -> Program {
        var simulation = ProgramSimulation(queue: queue, operations: operations)
        for step in steps { simulation.perform(step) }
        return Program(
            identifier: "named:\(name)", queue: queue, operations: operations, steps: steps,
            startOrderIsDefined: simulation.startOrderIsDefined)
    }
}
