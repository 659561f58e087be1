// Task priorities and qualities of service stand for each other where an async body meets
// the queue: a body's task starts at its operation's quality, and an awaiting task's
// priority escalates the operation.

extension QualityOfService {
    /// The quality of service that a task priority stands for.
    init(_ priority: TaskPriority) {
        switch priority.rawValue {
        case 33...: self = .userInteractive
        case 25..<33: self = .userInitiated
        case 21..<25: self = .default
        case 17..<21: self = .utility
        default: self = .background
        }
    }
}

extension TaskPriority {
    /// The task priority that runs work at `quality`.
    init(_ quality: QualityOfService) {
        switch quality {
        case .userInteractive: self.init(rawValue: 33)
        case .userInitiated: self = .high
        case .utility: self = .low
        case .background: self = .background
        default: self = .medium
        }
    }
}
