import DifferentialPrograms

/// Runs one program once on the driver's thread and returns what it observed, by key.
/// Keys name an operation (`a.work`, `a.final`), a step (`step3.returned`), a barrier
/// (`barrier1.a`), the queue, or `order` (only where the start order is defined).
func run(_ program: Program) -> [String: String] {
    let context = RunContext()
    let recorder = context.recorder
    let queue: TestedOperationQueue =
        program.queue.subclassOverridesAddOperation ? RecordingQueue(recorder: recorder) : TestedOperationQueue()
    if program.queue.maxConcurrentOperationCount != -1 {
        queue.maxConcurrentOperationCount = program.queue.maxConcurrentOperationCount
    }
    if let quality = program.queue.qualityOfService { queue.qualityOfService = quality.tested }
    if program.queue.startsSuspended { queue.isSuspended = true }

    var scripts: [Int: OperationScript] = [:]
    for (index, spec) in program.operations.enumerated() where spec.kind != .queueBlock {
        let script = OperationScript(index: index, spec: spec, context: context)
        let operation = makeOperation(script)
        if let priority = spec.priority { operation.queuePriority = priority.tested }
        if let quality = spec.qualityOfService { operation.qualityOfService = quality.tested }
        script.installCompletionBlock(on: operation)
        scripts[index] = script
        context.register(operation, at: index)
    }
    for (index, spec) in program.operations.enumerated() {
        for dependency in spec.dependencies {
            context.operation(index)!.addDependency(context.operation(dependency)!)
        }
    }

    var added = Set<Int>()
    for (number, step) in program.steps.enumerated() {
        let key = "step\(number + 1)"
        switch step {
        case .add(let index):
            queue.addOperation(context.operation(index)!)
            added.insert(index)
        case .addBatch(let indices, let wait):
            queue.addOperations(indices.map { context.operation($0)! }, waitUntilFinished: wait)
            added.formUnion(indices)
            if wait { recorder.set("\(key).returned", indices.allSatisfy { context.operation($0)!.isFinished }) }
        case .addBlock(let index):
            let name = program.operations[index].name
            queue.addOperation {
                recorder.enter(name)
                recorder.increment("\(name).work")
            }
            added.insert(index)
        case .addBarrier(let barrier):
            let relations = program.operations.indices.filter { program.operations[$0].kind != .queueBlock }.map {
                (index: $0, relation: added.contains($0) ? "before" : "after")
            }
            queue.addBarrierBlock {
                recorder.enter("barrier\(barrier)")
                for (index, relation) in relations {
                    guard let operation = context.operation(index) else { continue }
                    recorder.set(
                        "barrier\(barrier).\(program.operations[index].name)",
                        "\(relation) finished=\(operation.isFinished) executing=\(operation.isExecuting)")
                }
            }
        case .setSuspended(let suspended):
            queue.isSuspended = suspended
        case .setMaxConcurrentOperationCount(let count):
            queue.maxConcurrentOperationCount = count
        case .cancel(let index):
            context.operation(index)!.cancel()
        case .cancelAllOperations:
            queue.cancelAllOperations()
        case .setPriority(let index, let priority):
            context.operation(index)!.queuePriority = priority.tested
        case .setQualityOfService(let index, let quality):
            context.operation(index)!.qualityOfService = quality.tested
        case .openGate(let index):
            let operation = context.operation(index)!
            scripts[index]!.openGate()
            operation.willChangeValue(forKey: "isReady")
            operation.didChangeValue(forKey: "isReady")
        case .cancelWhileRunning(let index):
            let operation = context.operation(index)!
            let script = scripts[index]!
            script.started.wait()
            recorder.set("\(key).executingWhenCancelled", operation.isExecuting)
            operation.cancel()
            recorder.set("\(key).cancelledWhileRunning", operation.isCancelled)
            script.release.signal()
        case .waitUntilFinished(let index):
            let operation = context.operation(index)!
            operation.waitUntilFinished()
            recorder.set("\(key).returned", operation.isFinished)
        case .waitUntilAllOperationsAreFinished:
            queue.waitUntilAllOperationsAreFinished()
            recorder.set("\(key).returned", true)
            recorder.set("\(key).operationCount", String(queue.operationCount))
        case .checkpoint:
            recorder.set("\(key).operationCount", String(queue.operationCount))
            recorder.set("\(key).operations", queue.operations.map { $0.name ?? "unnamed" }.joined(separator: " "))
        }
    }

    // Completion blocks may still run after the waits (Linux's Foundation starts them after
    // the operation is finished): wait for each before reading what they recorded.
    let completions = program.operations.filter { $0.kind != .queueBlock && $0.completion != .none }.count
    for _ in 0..<completions { context.completionRan.wait() }

    for (index, spec) in program.operations.enumerated() {
        recorder.setDefault("\(spec.name).work", "0")
        if spec.kind.overridesStart { recorder.setDefault("\(spec.name).start", "0") }
        guard let operation = context.operation(index) else { continue }
        recorder.set(
            "\(spec.name).final",
            "finished=\(operation.isFinished) cancelled=\(operation.isCancelled) executing=\(operation.isExecuting)")
    }
    recorder.set("queue.operationCount", String(queue.operationCount))
    if program.startOrderIsDefined { recorder.set("order", recorder.order.joined(separator: " ")) }
    context.clear()
    return recorder.values
}

extension Priority {
    var tested: TestedOperation.QueuePriority {
        switch self {
        case .veryLow: .veryLow
        case .low: .low
        case .normal: .normal
        case .high: .high
        case .veryHigh: .veryHigh
        }
    }
}

extension ServiceQuality {
    var tested: TestedQualityOfService {
        switch self {
        case .userInteractive: .userInteractive
        case .userInitiated: .userInitiated
        case .default: .default
        case .utility: .utility
        case .background: .background
        }
    }
}
