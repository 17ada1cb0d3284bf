#![doc = include_str!("../README.md")]
//!
//! `#[derive(Config)]`: a configuration section as a plain struct or enum.
//!
//! Use it through `ferrowizard::Config` (or `ferrowizard_config::Config`); the macro's
//! documentation is there, with examples.

use proc_macro::TokenStream;
use syn::{Data, DeriveInput, parse_macro_input};

mod attrs;
mod enums;
mod krate;
mod rules;
mod structs;

/// Implements `Default`, `Deserialize`, `Serialize` and `garde::Validate` for a configuration
/// section; see `ferrowizard_config::Config` for the attributes.
#[proc_macro_derive(Config, attributes(config))]
pub fn derive_config(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let expanded = match &input.data {
        Data::Struct(data) => structs::expand(&input, data),
        Data::Enum(data) => enums::expand(&input, data),
        Data::Union(_) => Err(syn::Error::new_spanned(
            &input.ident,
            "#[derive(Config)] takes a struct or an enum",
        )),
    };
    expanded
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
