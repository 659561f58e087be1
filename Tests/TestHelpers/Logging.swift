import InMemoryLogging
import Logging

/// A logger with `label` at `level`, and the in-memory handler that keeps its entries.
public func inMemoryLogger(label: String, level: Logger.Level) -> (InMemoryLogHandler, Logger) {
    let memory = InMemoryLogHandler()
    var logger = Logger(label: label) { _ in memory }
    logger.logLevel = level
    return (memory, logger)
}
