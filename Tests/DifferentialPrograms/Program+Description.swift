/// A program as Swift-like lines, for a failure message or a hand-written reproduction.
extension Program: CustomStringConvertible {
    public var description: String {
        var lines = ["// \(identifier)\(startOrderIsDefined ? " (start order defined)" : "")"]
        lines.append(
            "let queue = \(queue.subclassOverridesAddOperation ? "RecordingQueue()  // overrides addOperation(_:)" : "OperationQueue()")")
        if queue.maxConcurrentOperationCount != -1 {
            lines.append("queue.maxConcurrentOperationCount = \(queue.maxConcurrentOperationCount)")
        }
        if let quality = queue.qualityOfService { lines.append("queue.qualityOfService = .\(quality)") }
        if queue.startsSuspended { lines.append("queue.isSuspended = true") }
        for operation in operations {
            lines.append(contentsOf: operation.declaration(in: self))
        }
        for step in steps {
            lines.append(step.line(in: self))
        }
        return lines.joined(separator: "\n")
    }
}

extension OperationSpec {
    func declaration(in program: Program) -> [String] {
        let shape: String
        switch kind {
        case .block(let blocks): shape = "BlockOperation with \(blocks) block\(blocks == 1 ? "" : "s")"
        case .plain: shape = "subclass: main()"
        case .startLogging: shape = "subclass: start() { super.start() }, main()"
        case .advisedAsynchronous: shape = "subclass: isAsynchronous = true, main()"
        case .superStart(let finish, let announce):
            shape = "subclass: own isExecuting/isFinished announced by \(announce == .keys ? "their keys" : "\"state\" only"); start() { super.start() }; main() finishes \(finish == .later ? "later on another thread" : "before returning")"
        case .ownStart(let finish, let announce):
            shape = "subclass: own isExecuting/isFinished announced by \(announce == .keys ? "their keys" : "\"state\" only"); start() without super finishes \(finish == .later ? "later on another thread" : "before returning")"
        case .queueBlock: return ["// \(name): a block added with queue.addOperation { }"]
        }
        var traits: [String] = []
        if readyGate { traits.append("isReady gated") }
        if holdsUntilReleased { traits.append("work holds until released") }
        if cancelsItself { traits.append("work cancels itself") }
        if !cancelsInWork.isEmpty {
            traits.append("work cancels \(cancelsInWork.map { program.operations[$0].name }.joined(separator: ", "))")
        }
        if completion != .none {
            traits.append(completion == .record ? "completion block" : "completion block waits for its operation")
        }
        var lines = ["let \(name) = \(shape)\(traits.isEmpty ? "" : "  // \(traits.joined(separator: "; "))")"]
        if let priority { lines.append("\(name).queuePriority = .\(priority)") }
        if let qualityOfService { lines.append("\(name).qualityOfService = .\(qualityOfService)") }
        for dependency in dependencies {
            lines.append("\(name).addDependency(\(program.operations[dependency].name))")
        }
        return lines
    }
}

extension Step {
    func line(in program: Program) -> String {
        func name(_ index: Int) -> String { program.operations[index].name }
        switch self {
        case .add(let index): return "queue.addOperation(\(name(index)))"
        case .addBatch(let indices, let wait):
            return "queue.addOperations([\(indices.map(name).joined(separator: ", "))], waitUntilFinished: \(wait))"
        case .addBlock(let index): return "queue.addOperation { \(name(index)) }"
        case .addBarrier(let number): return "queue.addBarrierBlock { barrier\(number): record isFinished of the others }"
        case .setSuspended(let suspended): return "queue.isSuspended = \(suspended)"
        case .setMaxConcurrentOperationCount(let count): return "queue.maxConcurrentOperationCount = \(count)"
        case .cancel(let index): return "\(name(index)).cancel()"
        case .cancelAllOperations: return "queue.cancelAllOperations()"
        case .setPriority(let index, let priority): return "\(name(index)).queuePriority = .\(priority)"
        case .setQualityOfService(let index, let quality): return "\(name(index)).qualityOfService = .\(quality)"
        case .openGate(let index): return "open \(name(index))'s gate; \(name(index)).didChangeValue(forKey: \"isReady\")"
        case .cancelWhileRunning(let index): return "once \(name(index)) runs: \(name(index)).cancel(), then release it"
        case .waitUntilFinished(let index): return "\(name(index)).waitUntilFinished()"
        case .waitUntilAllOperationsAreFinished: return "queue.waitUntilAllOperationsAreFinished()"
        case .checkpoint: return "record queue.operationCount, queue.operations"
        }
    }
}
