import Logging
import Operations

extension OperationDiagnostic {
    /// A handler that sends the library's diagnostics to `logger`: programmer errors at
    /// `critical` (just before the process stops), stalls, cycles and warnings at
    /// `warning`, each with the metadata `operations.diagnostic` = its kind.
    ///
    /// ```swift
    /// OperationDiagnostic.handler = OperationDiagnostic.logging(to: Logger(label: "operations"))
    /// ```
    public static func logging(to logger: Logger) -> Handler {
        { diagnostic in
            logger.log(
                level: level(of: diagnostic.kind), "\(diagnostic.message)",
                metadata: ["operations.diagnostic": "\(diagnostic.kind.name)"])
        }
    }

    /// The log level of a kind of diagnostic.
    public static func level(of kind: Kind) -> Logger.Level {
        switch kind {
        case .misuse: .critical
        case .stall, .dependencyCycle, .warning: .warning
        default: .notice
        }
    }
}
