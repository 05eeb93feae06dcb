"""Profile owners: `annotator owners link|list|revoke`."""

import typer
from rich.table import Table
from rich.text import Text

from annotator.cli.common import (
    BaseUrlOption,
    DbOption,
    LinkDaysOption,
    StudyOption,
    app,
    as_system,
    out,
    print_link,
    user_errors,
)

owners_app = typer.Typer(
    help="Single-use links for profile owners to rate their own pairs.", no_args_is_help=True
)
app.add_typer(owners_app, name="owners")


@owners_app.command("link")
@user_errors
def owners_link(
    owner: str,
    study: StudyOption,
    base_url: BaseUrlOption = "http://localhost:8501",
    days: LinkDaysOption = 7.0,
    database: DbOption = None,
) -> None:
    """Print a single-use link for OWNER to rate the pairs of their own profile in a study."""
    from annotator.rating import owner_links

    print_link(
        database, owner_links.issue_owner_link, "owner_token", base_url, days, study=study, owner=owner
    )


@owners_app.command("list")
@user_errors
def owners_list(study: StudyOption, database: DbOption = None) -> None:
    """List the owner links of a study."""
    from annotator.rating import owner_links

    links = as_system(database, owner_links.list_owner_links, study=study)
    table = Table("owner", "created", "expires", "used", "revoked", "open")
    for link in links:
        when = [
            f"{link[k]:%Y-%m-%d %H:%M}" if link[k] else "" for k in ("created_at", "expires_at", "used_at")
        ]
        revoked = f"{link['revoked_at']:%Y-%m-%d %H:%M}" if link["revoked_at"] else ""
        table.add_row(Text(str(link["owner"])), *when, revoked, "yes" if link["open"] else "no")
    out.print(table)


@owners_app.command("revoke")
@user_errors
def owners_revoke(owner: str, study: StudyOption, database: DbOption = None) -> None:
    """Revoke every unused link of OWNER in a study."""
    from annotator.rating import owner_links

    n = as_system(database, owner_links.revoke_owner_links, study=study, owner=owner)
    out.print(Text(f"revoked {n} link(s) of {owner}"))
