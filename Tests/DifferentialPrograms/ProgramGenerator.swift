/// How big the generated programs are.
public struct GeneratorParameters: Sendable {
    /// Operations a program declares (at least 2), not counting blocks added with `addOperation { }`.
    public var maximumOperations: Int
    public var maximumBarriers: Int

    public init(maximumOperations: Int = 6, maximumBarriers: Int = 2) {
        self.maximumOperations = max(2, maximumOperations)
        self.maximumBarriers = maximumBarriers
    }
}

/// SplitMix64: small, fast, and the same sequence on every platform for a seed.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Generates programs from a seed. Every program it makes terminates on both
/// implementations and observes only what is defined (see ``ProgramSimulation``): waits are
/// made only when everything they wait for can run, a cancel from the driver reaches only
/// operations that cannot have started, and the start order is recorded only where it is
/// defined. The deliberate differences between Linux's Foundation and `Operations` that
/// are excluded by construction are marked "Deliberate:" below.
public enum ProgramGenerator {
    public static func program(seed: UInt64, parameters: GeneratorParameters = GeneratorParameters()) -> Program {
        var builder = Builder(random: SeededGenerator(seed: seed), parameters: parameters)
        return builder.build(identifier: "seed:\(seed)")
    }
}

private struct Builder {
    var random: SeededGenerator
    let parameters: GeneratorParameters

    init(random: SeededGenerator, parameters: GeneratorParameters) {
        self.random = random
        self.parameters = parameters
    }

    mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &random) < probability
    }

    mutating func pick<T>(_ weighted: [(T, Double)]) -> T {
        let total = weighted.reduce(0) { $0 + $1.1 }
        var point = Double.random(in: 0..<total, using: &random)
        for (value, weight) in weighted {
            if point < weight { return value }
            point -= weight
        }
        return weighted[weighted.count - 1].0
    }

    mutating func build(identifier: String) -> Program {
        // Half the programs are written for their start order: everything is set up on a
        // suspended queue that is serial when it runs (it may have been concurrent while
        // operations were added, which fixes their bands), then the queue is resumed.
        let focusOnOrder = chance(0.5)
        let queue = QueueSpec(
            subclassOverridesAddOperation: chance(0.25),
            maxConcurrentOperationCount: pick([(1, 0.45), (-1, 0.3), (2, 0.17), (3, 0.08)]),
            startsSuspended: focusOnOrder || chance(0.75),
            qualityOfService: chance(0.15) ? ServiceQuality.allCases.randomElement(using: &random) : nil)
        var operations = makeOperations()
        if focusOnOrder { withoutEscalation(&operations) }
        let held = chooseHeldOperation(operations)
        if let held { operations[held].holdsUntilReleased = true }
        addCancellationsInWork(&operations)
        var simulation = ProgramSimulation(queue: queue, operations: operations)
        emitSteps(&simulation, held: held, focusOnOrder: focusOnOrder)
        return Program(
            identifier: identifier, queue: queue, operations: operations, steps: simulation.steps,
            startOrderIsDefined: simulation.startOrderIsDefined && !ProgramSimulation.escalationMayReorder(operations))
    }

    mutating func makeOperations() -> [OperationSpec] {
        let count = Int.random(in: 2...parameters.maximumOperations, using: &random)
        let names = "abcdefghijklmnopqrstuvwxyz".map(String.init)
        var operations: [OperationSpec] = []
        for index in 0..<count {
            let kind: OperationKind = pick([
                (.block(blocks: chance(0.25) ? 2 : 1), 0.22),
                (.plain, 0.14),
                (.startLogging, 0.12),
                (.advisedAsynchronous, 0.1),
                (.superStart(finish: chance(0.5) ? .later : .beforeStartReturns, announce: .keys), 0.21),
                (.ownStart(finish: chance(0.5) ? .later : .beforeStartReturns, announce: .keys), 0.21),
            ])
            var spec = OperationSpec(name: names[index % names.count] + (index < names.count ? "" : "\(index)"), kind: kind)
            spec.kind = withAnnouncement(kind)
            if chance(0.3) { spec.priority = Priority.allCases.randomElement(using: &random) }
            if chance(0.25) { spec.qualityOfService = ServiceQuality.allCases.randomElement(using: &random) }
            for earlier in 0..<index where chance(0.3) && spec.dependencies.count < 2 {
                spec.dependencies.append(earlier)
            }
            spec.completion = pick([(.none, 0.55), (.record, 0.37), (.waitsForItsOperation, 0.08)])
            spec.readyGate = kind.isSubclass && chance(0.15)
            spec.cancelsItself = chance(0.07)
            operations.append(spec)
        }
        if chance(0.3) {
            operations.append(OperationSpec(name: "q\(operations.count)", kind: .queueBlock))
        }
        return operations
    }

    /// Deliberate (dependent keys): announcing only `"state"` reaches Linux's Foundation's
    /// queue only when the operation finishes before its `start()` returns (the queue reads
    /// `isFinished` then), so only such an operation announces `"state"` alone.
    /// Linux's Foundation: a subclass that calls `super.start()` and announces `"isFinished"`
    /// inside `main()` is finished twice (its completion block runs twice, the queue unlinks
    /// it twice), so one that finishes inside `main()` announces `"state"` alone.
    mutating func withAnnouncement(_ kind: OperationKind) -> OperationKind {
        switch kind {
        case .superStart(.beforeStartReturns, _):
            return .superStart(finish: .beforeStartReturns, announce: .state)
        case .ownStart(.beforeStartReturns, _) where chance(0.4):
            return .ownStart(finish: .beforeStartReturns, announce: .state)
        default:
            return kind
        }
    }

    /// Drops the quality of service of dependents that would escalate their dependencies.
    mutating func withoutEscalation(_ operations: inout [OperationSpec]) {
        for index in operations.indices where !operations[index].dependencies.isEmpty {
            if ProgramSimulation.escalationMayReorder([operations[index]] + operations) {
                operations[index].qualityOfService = nil
            }
        }
    }

    mutating func chooseHeldOperation(_ operations: [OperationSpec]) -> Int? {
        guard chance(0.15) else { return nil }
        let candidates = operations.indices.filter { operations[$0].kind != .queueBlock && !operations[$0].cancelsItself }
        return candidates.randomElement(using: &random)
    }

    /// An operation's work may cancel an operation that depends on it directly: that one
    /// cannot have started yet, on any queue. (Not one that depends on it through another:
    /// a cancelled operation ignores its dependencies, so the one between may finish early
    /// and let it start.)
    mutating func addCancellationsInWork(_ operations: inout [OperationSpec]) {
        for index in operations.indices where operations[index].kind != .queueBlock && chance(0.1) {
            let targets = operations.indices.filter { target in
                operations[target].dependencies.contains(index)
                    && ProgramSimulation.mayBeCancelled(operations[target])
            }
            if let target = targets.randomElement(using: &random) {
                operations[index].cancelsInWork.append(target)
            }
        }
    }

    mutating func emitSteps(_ simulation: inout ProgramSimulation, held: Int?, focusOnOrder: Bool) {
        let operations = simulation.operations
        // The order the operations are added, cut into single adds and batches; the held
        // operation comes last, alone, in the final phase.
        var order = operations.indices.filter { $0 != held }.shuffled(using: &random)
        var segments: [[Int]] = []
        while !order.isEmpty {
            let first = order.removeFirst()
            var segment = [first]
            if operations[first].kind != .queueBlock && chance(0.35) {
                while segment.count < 3, let next = order.first, operations[next].kind != .queueBlock, chance(0.6) {
                    segment.append(order.removeFirst())
                }
            }
            segments.append(segment)
        }

        // The first phase: anything that keeps the program terminating and defined.
        let attempts = Int.random(in: 2...(operations.count + 8), using: &random)
        for _ in 0..<attempts {
            var choices: [(Action, Double)] = []
            if !segments.isEmpty { choices.append((.addSegment, 5)) }
            if simulation.barrierCount < parameters.maximumBarriers && simulation.mayAddBarrier
                && simulation.holdsUnfinishedOperation
            {
                choices.append((.barrier, 1))
            }
            if !focusOnOrder { choices.append((.toggleSuspended, 1.5)) }
            choices.append((.setMax, 0.6))
            if !simulation.cancellable.isEmpty { choices.append((.cancel, 1.5)) }
            if simulation.mayCancelAll { choices.append((.cancelAll, 0.4)) }
            choices.append((.setPriority, 0.6))
            choices.append((.setQualityOfService, 0.3))
            if !simulation.closedGates.isEmpty { choices.append((.openGate, 1)) }
            if simulation.isQuiet { choices.append((.checkpoint, 1)) }
            if !simulation.awaitable.isEmpty { choices.append((.wait, 1)) }
            if simulation.mayWaitForAll { choices.append((.waitAll, 0.5)) }
            switch pick(choices) {
            case .addSegment:
                let segment = segments.removeFirst()
                addSegment(segment, to: &simulation, mayWait: true)
            case .barrier:
                simulation.perform(.addBarrier(simulation.barrierCount + 1))
            case .toggleSuspended:
                simulation.perform(.setSuspended(!simulation.isSuspended))
            case .setMax:
                simulation.perform(.setMaxConcurrentOperationCount(pick([(1, 0.5), (2, 0.25), (-1, 0.25)])))
            case .cancel:
                simulation.perform(.cancel(simulation.cancellable.randomElement(using: &random)!))
            case .cancelAll:
                simulation.perform(.cancelAllOperations)
            case .setPriority:
                let index = simulation.declaredOperations.randomElement(using: &random)!
                simulation.perform(.setPriority(index, Priority.allCases.randomElement(using: &random)!))
            case .setQualityOfService:
                let index = simulation.declaredOperations.randomElement(using: &random)!
                simulation.perform(.setQualityOfService(index, ServiceQuality.allCases.randomElement(using: &random)!))
            case .openGate:
                simulation.perform(.openGate(simulation.closedGates.randomElement(using: &random)!))
            case .checkpoint:
                simulation.perform(.checkpoint)
            case .wait:
                simulation.perform(.waitUntilFinished(simulation.awaitable.randomElement(using: &random)!))
            case .waitAll:
                simulation.perform(.waitUntilAllOperationsAreFinished)
            }
        }

        // The final phase: everything added, every gate open, the queue running; then the
        // held operation is cancelled while it runs, and the waits.
        for index in simulation.closedGates { simulation.perform(.openGate(index)) }
        if focusOnOrder {
            for segment in segments { addSegment(segment, to: &simulation, mayWait: false) }
            if let held { simulation.perform(.add(held)) }
            if chance(0.7) { simulation.perform(.setMaxConcurrentOperationCount(1)) }
            simulation.perform(.setSuspended(false))
            if let held { simulation.perform(.cancelWhileRunning(held)) }
        } else {
            let resumeFirst = chance(0.5)
            if resumeFirst && simulation.isSuspended { simulation.perform(.setSuspended(false)) }
            for segment in segments { addSegment(segment, to: &simulation, mayWait: true) }
            if simulation.isSuspended { simulation.perform(.setSuspended(false)) }
            if let held {
                simulation.perform(.add(held))
                simulation.perform(.cancelWhileRunning(held))
            }
        }
        for _ in 0..<Int.random(in: 0...2, using: &random) {
            if let index = simulation.awaitable.randomElement(using: &random) {
                simulation.perform(.waitUntilFinished(index))
            }
        }
        simulation.perform(.waitUntilAllOperationsAreFinished)
        if chance(0.2) {
            simulation.perform(.setSuspended(true))
            simulation.perform(.checkpoint)
        }
    }

    mutating func addSegment(_ segment: [Int], to simulation: inout ProgramSimulation, mayWait: Bool) {
        if segment.count == 1 {
            let index = segment[0]
            if simulation.operations[index].kind == .queueBlock {
                simulation.perform(.addBlock(index))
            } else if chance(0.2) {
                // A batch of one.
                let wait = mayWait && simulation.mayWaitAfterAdding(segment) && chance(0.3)
                simulation.perform(.addBatch(segment, waitUntilFinished: wait))
            } else {
                simulation.perform(.add(index))
            }
        } else {
            let wait = mayWait && simulation.mayWaitAfterAdding(segment) && chance(0.3)
            simulation.perform(.addBatch(segment, waitUntilFinished: wait))
        }
    }

    enum Action {
        case addSegment, barrier, toggleSuspended, setMax, cancel, cancelAll, setPriority, setQualityOfService
        case openGate, checkpoint, wait, waitAll
    }
}
