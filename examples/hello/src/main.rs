//! The hello service's command line: `hello server CONFIG`, `hello check CONFIG`,
//! `hello greetings CONFIG`.

fn main() -> std::process::ExitCode {
    ferrowizard::run(hello::Hello)
}
