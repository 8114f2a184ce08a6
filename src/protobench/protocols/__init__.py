"""Protocol plugins and the contract they implement."""
