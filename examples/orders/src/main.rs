//! The orders service's command line: `orders server CONFIG`, `orders check CONFIG`,
//! `orders db migrate|status|rollback CONFIG`.

fn main() -> std::process::ExitCode {
    ferrowizard::run(orders::Orders)
}
