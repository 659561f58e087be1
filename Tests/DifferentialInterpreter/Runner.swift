import DifferentialPrograms
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The command line of both differential executables:
///
///     DifferentialOnFoundation [--runs K] [--timeout SECONDS] [--operations N] [--print | --json] PROGRAM…
///
/// PROGRAM is `seed:N`, `seed:FIRST-LAST`, `named:NAME`, `named:all` or `file:PATH` (JSON). For each program and
/// run it prints `program ID`, `run K`, one `key<TAB>value` line per observation (sorted by
/// key), and `end K`. A run that does not finish within the timeout prints `timeout K` and
/// ends the process with status 3 (its threads cannot be taken back); a crash leaves the
/// `run K` line without its end. `--print` prints the programs as Swift-like lines instead of running them, `--json` as JSON.
@main
struct DifferentialRunner {
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        var runs = 1
        var timeout = 5.0
        var parameters = GeneratorParameters()
        var printOnly = false
        var printJSON = false
        var programs: [Program] = []
        do {
            while !arguments.isEmpty {
                let argument = arguments.removeFirst()
                switch argument {
                case "--runs": runs = try number(&arguments, argument)
                case "--timeout": timeout = Double(try number(&arguments, argument))
                case "--operations": parameters.maximumOperations = max(2, try number(&arguments, argument))
                case "--print": printOnly = true
                case "--json": printJSON = true
                default: programs += try ProgramCatalog.programs(argument, parameters: parameters)
                }
            }
        } catch {
            let message = Array("\(implementationName): \(error)\n".utf8)
            _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            exit(2)
        }
        if printJSON {
            print(ProgramCatalog.json(programs))
            return
        }
        for program in programs {
            if printOnly {
                print(program)
                print()
                continue
            }
            emit("program \(program.identifier)")
            for runNumber in 0..<runs {
                emit("run \(runNumber)")
                guard let values = runWithWatchdog(program, timeout: timeout) else {
                    emit("timeout \(runNumber)")
                    exit(3)
                }
                var lines = values.sorted { $0.key < $1.key }.map { "\($0.key)\t\($0.value)" }
                lines.append("end \(runNumber)")
                emit(lines.joined(separator: "\n"))
            }
        }
    }

    struct BadArgument: Error, CustomStringConvertible {
        let description: String
    }

    static func number(_ arguments: inout [String], _ option: String) throws -> Int {
        guard !arguments.isEmpty, let value = Int(arguments.removeFirst()), value > 0 else {
            throw BadArgument(description: "\(option) needs a positive number")
        }
        return value
    }

    /// Prints and flushes, so that what a crash leaves behind says where it happened.
    static func emit(_ text: String) {
        print(text)
        fflush(nil)
    }

    /// Runs the program on a thread of its own; nil when it did not finish in time.
    static func runWithWatchdog(_ program: Program, timeout: Double) -> [String: String]? {
        let result = Guarded<[String: String]?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let values = run(program)
            result.withLock { $0 = values }
            done.signal()
        }
        guard done.wait(timeout: .now() + timeout) == .success else { return nil }
        return result.withLock { $0 }
    }
}
